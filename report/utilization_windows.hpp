// Utilization over time: the step cut into equal windows of cycles and, for each
// execution unit, the cycles of each window in which it had an instruction in flight.
// Read from report.json's "ops" (the instruction timeline), so it needs a run without
// --no-instructions. Feeds timeline.csv and report.html's utilization plot.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tpusim {

// Window rule: at most kMaxTimelineWindows windows of ceil(total_cycles / kMaxTimelineWindows)
// cycles each; the last one ends at total_cycles and may be shorter.
inline constexpr uint64_t kMaxTimelineWindows = 100;
uint64_t timelineWindowCycles(uint64_t total_cycles);  // 0 for an empty step

struct UtilizationWindows {
  uint64_t total_cycles = 0;
  uint64_t window_cycles = 0;               // every window but perhaps the last
  std::vector<std::string> units;           // execution units, in report.json's "units" order
  std::vector<std::vector<uint64_t>> busy;  // [unit][window]: cycles with an instruction in flight

  size_t windows() const;
  uint64_t windowStart(size_t window) const { return window * window_cycles; }
  uint64_t windowEnd(size_t window) const;
  double utilization(size_t unit, size_t window) const;  // busy / window length
};

// Throws Error(kInvalidInput) when an op names a unit report.json does not list, or ends
// past total_cycles (a malformed report).
UtilizationWindows utilizationWindows(const nlohmann::ordered_json& report);

// Whether the report carries the instruction timeline (a run without --no-instructions).
bool hasInstructionTimeline(const nlohmann::ordered_json& report);

}  // namespace tpusim
