#include "report/utilization_windows.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "sim/common/error.hpp"

namespace tpusim {

uint64_t timelineWindowCycles(uint64_t total_cycles) {
  const uint64_t count = std::min(kMaxTimelineWindows, total_cycles);
  return count == 0 ? 0 : (total_cycles + count - 1) / count;
}

size_t UtilizationWindows::windows() const {
  return window_cycles == 0 ? 0 : static_cast<size_t>((total_cycles + window_cycles - 1) / window_cycles);
}

uint64_t UtilizationWindows::windowEnd(size_t window) const {
  return std::min(total_cycles, (window + 1) * window_cycles);
}

double UtilizationWindows::utilization(size_t unit, size_t window) const {
  const uint64_t length = windowEnd(window) - windowStart(window);
  return static_cast<double>(busy[unit][window]) / static_cast<double>(length);
}

bool hasInstructionTimeline(const nlohmann::ordered_json& report) {
  return report.contains("ops") && !report.at("ops").empty();
}

UtilizationWindows utilizationWindows(const nlohmann::ordered_json& report) {
  UtilizationWindows out;
  out.total_cycles = report.at("total_cycles").get<uint64_t>();
  out.window_cycles = timelineWindowCycles(out.total_cycles);
  // Execution units are the "units" entries that count instructions (not HBM or CMEM).
  std::map<std::string, size_t> index;
  for (const auto& [name, unit] : report.at("units").items()) {
    if (!unit.contains("instructions")) continue;
    index.emplace(name, out.units.size());
    out.units.push_back(name);
  }
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> spans(out.units.size());
  for (const auto& op : report.at("ops")) {
    const std::string unit = op.at("unit").get<std::string>();
    const auto found = index.find(unit);
    if (found == index.end()) {
      throw Error(ErrorKind::kInvalidInput, "report.json: instruction '" + op.at("name").get<std::string>() +
                                                "' ran on '" + unit + "', which \"units\" does not list");
    }
    const uint64_t start = op.at("start_cycle").get<uint64_t>(), end = op.at("end_cycle").get<uint64_t>();
    if (start > end || end > out.total_cycles) {
      throw Error(ErrorKind::kInvalidInput, "report.json: instruction '" + op.at("name").get<std::string>() +
                                                "' runs from cycle " + std::to_string(start) + " to " +
                                                std::to_string(end) + ", outside the step's " +
                                                std::to_string(out.total_cycles) + " cycles");
    }
    spans[found->second].emplace_back(start, end);
  }
  out.busy.assign(out.units.size(), std::vector<uint64_t>(out.windows(), 0));
  for (size_t u = 0; u < spans.size(); ++u) {
    // A DMA engine has several transfers in flight: busy is the union of their spans,
    // as the busy_cycles stat counts it.
    std::sort(spans[u].begin(), spans[u].end());
    uint64_t covered = 0;  // cycles before this are already counted
    for (auto [start, end] : spans[u]) {
      start = std::max(start, covered);
      if (start >= end) continue;
      covered = end;
      for (size_t w = static_cast<size_t>(start / out.window_cycles); w < out.windows() && out.windowStart(w) < end;
           ++w) {
        out.busy[u][w] += std::min(end, out.windowEnd(w)) - std::max(start, out.windowStart(w));
      }
    }
  }
  return out;
}

}  // namespace tpusim
