// The frame every execution unit (MXU, vector unit, DMA engine) shares.
//
// A unit owns an in-order queue of instructions filled by its core's
// sequencer. It takes the head, waits until the scoreboard shows all of the
// head's dependencies retired, runs it (`execute`, which advances simulated
// time) and retires it. Units of one core run concurrently, so independent
// work overlaps. A unit that keeps several instructions in flight (the DMA
// engine) overrides `dispatch` and retires each with `retire`. Stats: busy
// (cycles with at least one instruction in flight), waiting-for-dependency
// (cycles the head waited with nothing in flight), idle and instruction counts,
// and utilization = busy / total cycles of the run.
#pragma once

#include <cstdint>
#include <string>

#include <systemc>

#include "sim/common/clock.hpp"
#include "sim/common/scoreboard.hpp"
#include "sim/common/stats.hpp"
#include "sim/common/timeline.hpp"
#include "traces/program.pb.h"

namespace tpusim {

// Context every unit needs at construction.
struct UnitContext {
  const ClockDomain* clock;
  Scoreboard* scoreboard;
  StatsRegistry* stats;
  Timeline* timeline;
  const Counter* total_cycles;  // set by the driver when the run ends
  uint32_t chip;
  size_t queue_depth;
};

class ExecUnit : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(ExecUnit);
  // Declares itself in the stats registry as a unit of `kind`.
  ExecUnit(sc_core::sc_module_name name, const std::string& stat_prefix, UnitKind kind, const UnitContext& context);

  // Called by the sequencer; blocks while the queue is full. nullptr ends the stream.
  void issue(const program::Instruction* instruction) { m_queue.write(instruction); }

  const std::string& statPrefix() const { return m_prefix; }

 protected:
  // Runs one instruction whose dependencies have retired, advancing time.
  virtual void execute(const program::Instruction& instruction) = 0;
  // Starts the head once its dependencies have retired; `event` holds its start. By default
  // runs execute() and retires it; an override may return first and retire it later.
  virtual void dispatch(const program::Instruction& instruction, const TimelineEvent& event);
  // Brackets one instruction in flight, for the busy count.
  void beginWork();
  void endWork();
  // Records `event` ending now and retires the instruction.
  void retire(const program::Instruction& instruction, TimelineEvent event);

  const UnitContext& context() const { return m_context; }
  // The timeline event of the running instruction, for a unit to add its detail to.
  TimelineEvent& currentEvent() { return m_event; }
  const ClockDomain& clock() const { return *m_context.clock; }

 private:
  void run();
  // Busy cycles so far, counting the open interval.
  uint64_t busySoFar() const;

  UnitContext m_context;
  std::string m_prefix;
  uint32_t m_timeline_id;
  sc_core::sc_fifo<const program::Instruction*> m_queue;
  Counter& m_busy;
  Counter& m_dependency_wait;
  Counter& m_instructions;
  TimelineEvent m_event;
  uint64_t m_in_flight = 0;
  uint64_t m_busy_since = 0;
};

}  // namespace tpusim
