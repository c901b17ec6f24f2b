#include "sim/chip/ici_unit.hpp"

#include <algorithm>

#include "sim/common/error.hpp"

namespace tpusim {

IciUnit::IciUnit(sc_core::sc_module_name name, const std::string& stat_prefix, const UnitContext& context,
                 CollectiveNetwork& network)
    : sc_core::sc_module(name),
      m_context(context),
      m_network(network),
      m_timeline_id(context.timeline->addUnit(stat_prefix)),
      m_queue(static_cast<int>(context.queue_depth)),
      m_busy(context.stats->counter(stat_prefix + ".busy_cycles", "cycles",
                                    "cycles with at least one collective in flight")),
      m_dependency_wait(
          context.stats->counter(stat_prefix + ".dependency_wait_cycles", "cycles",
                                 "cycles the head collective waited for its dependencies with none in flight")),
      m_instructions(context.stats->counter(stat_prefix + ".instructions", "count", "collectives retired")),
      m_bytes(context.stats->counter(stat_prefix + ".bytes", "B",
                                     "bytes of each replica's buffer, summed over collectives")) {
  context.stats->unit(stat_prefix, UnitKind::kIci);
  const Counter* busy = &m_busy;
  const Counter* total = context.total_cycles;
  context.stats->formula(
      stat_prefix + ".utilization", "fraction", "busy cycles / total cycles of the run", [busy, total] {
        return total->value() == 0 ? 0.0 : static_cast<double>(busy->value()) / static_cast<double>(total->value());
      });
  const Counter* waiting = &m_dependency_wait;
  context.stats->formula(stat_prefix + ".idle_cycles", "cycles",
                         "cycles with no collective in flight or waiting: total - busy - dependency wait",
                         [busy, waiting, total] {
                           return static_cast<double>(total->value()) - static_cast<double>(busy->value()) -
                                  static_cast<double>(waiting->value());
                         });
  SC_THREAD(run);
}

void IciUnit::run() {
  const ClockDomain& clock = *m_context.clock;
  while (true) {
    const program::Instruction* instruction = nullptr;
    m_queue.read(instruction);
    if (instruction == nullptr) return;
    const uint64_t arrived = clock.now();
    while (!m_context.scoreboard->ready(instruction->id())) wait(m_context.scoreboard->retiredEvent());
    const uint64_t start = clock.now();
    // Only the wait with nothing in flight: collectives in flight only finish meanwhile.
    if (m_in_flight.empty()) {
      m_dependency_wait.add(start - std::max(arrived, m_idle_since));
      m_busy_since = start;
    }
    m_in_flight[instruction->id()] =
        TimelineEvent{m_context.chip, instruction->id(), m_timeline_id, start, 0, start - arrived};
    m_network.launch(*instruction, *this);
  }
}

void IciUnit::complete(const program::Instruction& instruction) {
  const auto found = m_in_flight.find(instruction.id());
  if (found == m_in_flight.end()) throw Error(ErrorKind::kInternal, "ICI: a collective completed twice");
  const uint64_t end = m_context.clock->now();
  TimelineEvent event = found->second;
  m_in_flight.erase(found);
  event.end_cycle = end;
  if (m_in_flight.empty()) {
    m_busy.add(end - m_busy_since);
    m_idle_since = end;
  }
  m_instructions.add();
  m_bytes.add(instruction.collective().bytes());
  m_context.timeline->record(event);
  m_context.scoreboard->retire(instruction.id());
}

}  // namespace tpusim
