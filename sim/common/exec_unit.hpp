// The frame every execution unit (MXU, vector unit, DMA engine) shares.
//
// A unit owns an in-order queue of instructions filled by its core's
// sequencer. It takes the head, waits until the scoreboard shows all of the
// head's dependencies retired, runs it (`execute`, which advances simulated
// time) and retires it. Units of one core run concurrently, so independent
// work overlaps. Stats: busy, waiting-for-dependency (operands), idle and instruction counts,
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
  const program::ChipProgram* program = nullptr;  // set by the chip: the buffers' HBM addresses, for the DMA engines
};

class ExecUnit : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(ExecUnit);
  ExecUnit(sc_core::sc_module_name name, const std::string& stat_prefix, const UnitContext& context);

  // Called by the sequencer; blocks while the queue is full. nullptr ends the stream.
  void issue(const program::Instruction* instruction) { m_queue.write(instruction); }

  const std::string& statPrefix() const { return m_prefix; }

 protected:
  // Runs one instruction whose dependencies have retired, advancing time.
  virtual void execute(const program::Instruction& instruction) = 0;

  const UnitContext& context() const { return m_context; }
  // The timeline event of the running instruction, for a unit to add its detail to.
  TimelineEvent& currentEvent() { return m_event; }
  const ClockDomain& clock() const { return *m_context.clock; }

 private:
  void run();

  UnitContext m_context;
  std::string m_prefix;
  uint32_t m_timeline_id;
  sc_core::sc_fifo<const program::Instruction*> m_queue;
  Counter& m_busy;
  Counter& m_dependency_wait;
  Counter& m_instructions;
  TimelineEvent m_event;
};

}  // namespace tpusim
