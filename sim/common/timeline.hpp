// The execution timeline: when each Program instruction ran, on which unit.
// Filled by execution units as they retire instructions; read by reports
// (the per-op list of report.json, later the Perfetto trace).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpusim {

struct TimelineEvent {
  uint32_t chip = 0;
  uint32_t instruction = 0;  // id within the chip's program
  uint32_t unit = 0;         // index into Timeline::unitNames()
  uint64_t start_cycle = 0;
  uint64_t end_cycle = 0;
  uint64_t wait_cycles = 0;  // at the head of the unit's queue, waiting for its dependencies (operands)
  // MXU instructions only (array_timing.hpp): end - start = stream + stall + fill_drain.
  uint64_t folds = 0;
  uint64_t macs = 0;  // MACs the PEs performed (x passes)
  uint64_t stream_cycles = 0;
  uint64_t stall_cycles = 0;
  uint64_t fill_drain_cycles = 0;
};

class Timeline {
 public:
  // Returns the id of a unit name such as "chip0.core0.mxu0"; called at set-up.
  uint32_t addUnit(const std::string& name);
  const std::vector<std::string>& unitNames() const { return m_units; }

  // Room for `events` events (a Program's instruction count), so that a million-event run
  // does not copy its timeline as it grows.
  void reserve(size_t events) { m_events.reserve(events); }
  void record(const TimelineEvent& event) { m_events.push_back(event); }
  // Events in retirement order (deterministic: SystemC runs processes in a fixed order).
  const std::vector<TimelineEvent>& events() const { return m_events; }

 private:
  std::vector<std::string> m_units;
  std::vector<TimelineEvent> m_events;
};

}  // namespace tpusim
