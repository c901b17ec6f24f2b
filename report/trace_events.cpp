#include "report/trace_events.hpp"

#include <algorithm>
#include <map>
#include <vector>

#include "sim/common/error.hpp"

namespace tpusim {

namespace {

std::string metadata(const char* name, int pid, int tid, const nlohmann::ordered_json& args) {
  nlohmann::ordered_json event;
  event["name"] = name;
  event["ph"] = "M";
  event["pid"] = pid;
  event["tid"] = tid;
  event["args"] = args;
  return event.dump();
}

// A number as nlohmann::json writes it: the shortest text that reads back the same double.
void appendNumber(std::string& out, double value) {
  out += nlohmann::json(value).dump();
}

struct Span {
  uint64_t start = 0, end = 0;
  size_t unit = 0, lane = 0;
};

// Each op's lane on its unit: the first lane whose last instruction has ended when it
// starts (lane 0 unless it overlaps an earlier one), taking the ops in start order.
// Returns the unit's lane count.
size_t assignLanes(std::vector<Span>& spans, std::vector<size_t> members) {
  std::stable_sort(members.begin(), members.end(), [&](size_t a, size_t b) { return spans[a].start < spans[b].start; });
  std::vector<uint64_t> lane_end;
  for (size_t i : members) {
    size_t l = 0;
    while (l < lane_end.size() && lane_end[l] > spans[i].start) ++l;
    if (l == lane_end.size()) lane_end.push_back(0);
    lane_end[l] = spans[i].end;
    spans[i].lane = l;
  }
  return std::max<size_t>(1, lane_end.size());
}

}  // namespace

std::string traceJson(const nlohmann::ordered_json& report) {
  const double us_per_cycle = 1e6 / report.at("clock_hz").get<double>();
  const nlohmann::ordered_json& ops = report.at("ops");
  // Execution units in "units" order; the chip is the name's first part ("chip0").
  std::vector<std::string> units;
  std::map<std::string, size_t> unit_index;
  for (const auto& [name, unit] : report.at("units").items()) {
    if (!unit.contains("instructions")) continue;
    unit_index.emplace(name, units.size());
    units.push_back(name);
  }
  std::vector<Span> spans(ops.size());
  std::vector<std::vector<size_t>> members(units.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string& unit = ops[i].at("unit").get_ref<const std::string&>();
    const auto found = unit_index.find(unit);
    if (found == unit_index.end()) {
      throw Error(ErrorKind::kInvalidInput, "report.json: instruction '" + ops[i].at("name").get<std::string>() +
                                                "' ran on '" + unit + "', which \"units\" does not list");
    }
    spans[i] = {ops[i].at("start_cycle").get<uint64_t>(), ops[i].at("end_cycle").get<uint64_t>(), found->second, 0};
    members[found->second].push_back(i);
  }
  std::vector<size_t> lanes(units.size());
  for (size_t u = 0; u < units.size(); ++u) lanes[u] = assignLanes(spans, members[u]);

  // Written as text, an event at a time: a JSON object per event would cost most of a
  // large run's time (bench/report_views_bench.cpp).
  std::string events;
  const auto separate = [&events] {
    if (!events.empty()) events += ',';
  };
  std::map<std::string, int> pids;  // chip name to pid, in first-appearance order
  std::vector<int> unit_pid(units.size());
  std::vector<int> first_tid(units.size());
  int next_tid = 1;
  for (size_t u = 0; u < units.size(); ++u) {
    const std::string chip = units[u].substr(0, units[u].find('.'));
    auto [it, added] = pids.emplace(chip, static_cast<int>(pids.size()));
    if (added) {
      separate(), events += metadata("process_name", it->second, 0, {{"name", chip}});
      separate(), events += metadata("process_sort_index", it->second, 0, {{"sort_index", it->second}});
    }
    unit_pid[u] = it->second;
    first_tid[u] = next_tid;
    for (size_t l = 0; l < lanes[u]; ++l, ++next_tid) {
      const std::string track = l == 0 ? units[u] : units[u] + " #" + std::to_string(l);
      separate(), events += metadata("thread_name", it->second, next_tid, {{"name", track}});
      separate(), events += metadata("thread_sort_index", it->second, next_tid, {{"sort_index", next_tid}});
    }
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    const auto& op = ops[i];
    const Span& span = spans[i];
    separate();
    events += "{\"name\":";
    events += op.at("op").dump();
    events += ",\"cat\":";
    events += op.at("unit_kind").dump();
    events += ",\"ph\":\"X\",\"ts\":";
    appendNumber(events, static_cast<double>(span.start) * us_per_cycle);
    events += ",\"dur\":";
    appendNumber(events, static_cast<double>(span.end - span.start) * us_per_cycle);
    events += ",\"pid\":" + std::to_string(unit_pid[span.unit]);
    events += ",\"tid\":" + std::to_string(first_tid[span.unit] + static_cast<int>(span.lane));
    events += ",\"args\":{\"instruction\":";
    events += op.at("name").dump();
    events += ",\"op\":";
    events += op.at("op").dump();
    events += ",\"type\":";
    events += op.at("type").dump();
    events += ",\"start_cycle\":" + std::to_string(span.start);
    events += ",\"end_cycle\":" + std::to_string(span.end);
    events += ",\"flops\":";
    events += op.at("flops").dump();
    events += ",\"bytes\":";
    events += op.at("bytes").dump();
    events += "}}";
  }
  // memory_timeline (chip 0's) as a counter track: each window's most bytes held, from its start.
  const auto chip0 = pids.find("chip0");
  if (report.contains("memory_timeline") && chip0 != pids.end()) {
    const auto& memory = report.at("memory_timeline");
    const uint64_t window_cycles = memory.at("window_cycles").get<uint64_t>();
    const auto& held = memory.at("window_peak_bytes");
    for (size_t w = 0; w < held.size(); ++w) {
      nlohmann::ordered_json event;
      event["name"] = "HBM held (most bytes in the window)";
      event["ph"] = "C";
      event["ts"] = static_cast<double>(w * window_cycles) * us_per_cycle;
      event["pid"] = chip0->second;
      event["tid"] = 0;
      event["args"] = {{"bytes", held[w]}};
      separate(), events += event.dump();
    }
  }
  return "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[" + events + "]}\n";
}

}  // namespace tpusim
