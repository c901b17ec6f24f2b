#include "report/trace_events.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "sim/common/error.hpp"

namespace tpusim {

namespace {

nlohmann::ordered_json metadata(const char* name, int pid, int tid, const nlohmann::ordered_json& args) {
  nlohmann::ordered_json event;
  event["name"] = name;
  event["ph"] = "M";
  event["pid"] = pid;
  event["tid"] = tid;
  event["args"] = args;
  return event;
}

// Each op's lane on its unit: the first lane whose last instruction has ended when it
// starts (lane 0 unless it overlaps an earlier one), taking the ops in start order.
std::vector<size_t> assignLanes(const nlohmann::ordered_json& ops, const std::vector<size_t>& members) {
  std::vector<size_t> order = members;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return ops[a].at("start_cycle").get<uint64_t>() < ops[b].at("start_cycle").get<uint64_t>();
  });
  std::vector<uint64_t> lane_end;
  std::vector<size_t> lane(ops.size(), 0);
  for (size_t i : order) {
    const uint64_t start = ops[i].at("start_cycle").get<uint64_t>();
    size_t l = 0;
    while (l < lane_end.size() && lane_end[l] > start) ++l;
    if (l == lane_end.size()) lane_end.push_back(0);
    lane_end[l] = ops[i].at("end_cycle").get<uint64_t>();
    lane[i] = l;
  }
  return lane;
}

}  // namespace

nlohmann::ordered_json traceEvents(const nlohmann::ordered_json& report) {
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
  std::vector<std::vector<size_t>> members(units.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string unit = ops[i].at("unit").get<std::string>();
    const auto found = unit_index.find(unit);
    if (found == unit_index.end()) {
      throw Error(ErrorKind::kInvalidInput, "report.json: instruction '" + ops[i].at("name").get<std::string>() +
                                                "' ran on '" + unit + "', which \"units\" does not list");
    }
    members[found->second].push_back(i);
  }
  std::vector<size_t> lane(ops.size(), 0);
  std::vector<size_t> lanes(units.size(), 1);
  for (size_t u = 0; u < units.size(); ++u) {
    const std::vector<size_t> assigned = assignLanes(ops, members[u]);
    for (size_t i : members[u]) {
      lane[i] = assigned[i];
      lanes[u] = std::max(lanes[u], assigned[i] + 1);
    }
  }
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  std::map<std::string, int> pids;  // chip name to pid, in first-appearance order
  std::vector<int> unit_pid(units.size());
  std::vector<int> first_tid(units.size());
  int next_tid = 1;
  for (size_t u = 0; u < units.size(); ++u) {
    const std::string chip = units[u].substr(0, units[u].find('.'));
    auto [it, added] = pids.emplace(chip, static_cast<int>(pids.size()));
    if (added) {
      events.push_back(metadata("process_name", it->second, 0, {{"name", chip}}));
      events.push_back(metadata("process_sort_index", it->second, 0, {{"sort_index", it->second}}));
    }
    unit_pid[u] = it->second;
    first_tid[u] = next_tid;
    for (size_t l = 0; l < lanes[u]; ++l, ++next_tid) {
      const std::string track = l == 0 ? units[u] : units[u] + " #" + std::to_string(l);
      events.push_back(metadata("thread_name", it->second, next_tid, {{"name", track}}));
      events.push_back(metadata("thread_sort_index", it->second, next_tid, {{"sort_index", next_tid}}));
    }
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    const auto& op = ops[i];
    const size_t u = unit_index.at(op.at("unit").get<std::string>());
    const uint64_t start = op.at("start_cycle").get<uint64_t>(), end = op.at("end_cycle").get<uint64_t>();
    nlohmann::ordered_json event;
    event["name"] = op.at("op");
    event["cat"] = op.at("unit_kind");
    event["ph"] = "X";
    event["ts"] = static_cast<double>(start) * us_per_cycle;
    event["dur"] = static_cast<double>(end - start) * us_per_cycle;
    event["pid"] = unit_pid[u];
    event["tid"] = first_tid[u] + static_cast<int>(lane[i]);
    nlohmann::ordered_json args;
    args["instruction"] = op.at("name");
    args["op"] = op.at("op");
    args["type"] = op.at("type");
    args["start_cycle"] = start;
    args["end_cycle"] = end;
    args["flops"] = op.at("flops");
    args["bytes"] = op.at("bytes");
    event["args"] = args;
    events.push_back(event);
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
      events.push_back(event);
    }
  }
  nlohmann::ordered_json trace;
  trace["displayTimeUnit"] = "ns";
  trace["traceEvents"] = events;
  return trace;
}

}  // namespace tpusim
