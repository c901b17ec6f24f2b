#include "sim/common/exec_unit.hpp"

namespace tpusim {

ExecUnit::ExecUnit(sc_core::sc_module_name name, const std::string& stat_prefix, UnitKind kind,
                   const UnitContext& context)
    : sc_core::sc_module(name),
      m_context(context),
      m_prefix(stat_prefix),
      m_timeline_id(context.timeline->addUnit(stat_prefix)),
      m_queue(static_cast<int>(context.queue_depth)),
      m_busy(context.stats->counter(stat_prefix + ".busy_cycles", "cycles", "cycles spent executing instructions")),
      m_dependency_wait(
          context.stats->counter(stat_prefix + ".dependency_wait_cycles", "cycles",
                                 "cycles the head instruction waited for the instructions it depends on")),
      m_instructions(context.stats->counter(stat_prefix + ".instructions", "count", "instructions retired")) {
  context.stats->unit(stat_prefix, kind);
  const Counter* busy = &m_busy;
  const Counter* total = context.total_cycles;
  context.stats->formula(
      stat_prefix + ".utilization", "fraction", "busy cycles / total cycles of the run", [busy, total] {
        return total->value() == 0 ? 0.0 : static_cast<double>(busy->value()) / static_cast<double>(total->value());
      });
  const Counter* waiting = &m_dependency_wait;
  context.stats->formula(stat_prefix + ".idle_cycles", "cycles",
                         "cycles with no instruction at the unit: total - busy - dependency wait",
                         [busy, waiting, total] {
                           return static_cast<double>(total->value()) - static_cast<double>(busy->value()) -
                                  static_cast<double>(waiting->value());
                         });
  SC_THREAD(run);
}

void ExecUnit::run() {
  while (true) {
    const program::Instruction* instruction = nullptr;
    m_queue.read(instruction);
    if (instruction == nullptr) return;
    const uint64_t arrived = clock().now();
    const uint64_t busy_before = busySoFar();
    while (!m_context.scoreboard->ready(instruction->id())) wait(m_context.scoreboard->retiredEvent());
    const uint64_t start = clock().now();
    // Waiting while earlier instructions were in flight is busy time, not dependency wait.
    m_dependency_wait.add(start - arrived - (busySoFar() - busy_before));
    dispatch(*instruction, TimelineEvent{m_context.chip, instruction->id(), m_timeline_id, start, 0, start - arrived});
  }
}

void ExecUnit::dispatch(const program::Instruction& instruction, const TimelineEvent& event) {
  m_event = event;
  beginWork();
  execute(instruction);
  endWork();
  retire(instruction, m_event);
}

void ExecUnit::beginWork() {
  if (m_in_flight++ == 0) m_busy_since = clock().now();
}

void ExecUnit::endWork() {
  if (--m_in_flight == 0) m_busy.add(clock().now() - m_busy_since);
}

uint64_t ExecUnit::busySoFar() const {
  return m_busy.value() + (m_in_flight > 0 ? clock().now() - m_busy_since : 0);
}

void ExecUnit::retire(const program::Instruction& instruction, TimelineEvent event) {
  m_instructions.add();
  event.end_cycle = clock().now();
  m_context.timeline->record(event);
  m_context.scoreboard->retire(instruction.id());
}

}  // namespace tpusim
