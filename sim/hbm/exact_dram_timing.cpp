#include "sim/hbm/exact_dram_timing.hpp"

#include "sim/hbm/burst_walk.hpp"

namespace tpusim {

ExactDramTiming::ExactDramTiming(sc_core::sc_module_name name, const DramConfig& config, const ClockDomain& clock,
                                 uint64_t latency_cycles, StatsRegistry& stats, const std::string& stat_prefix,
                                 Counter& busy)
    : sc_core::sc_module(name),
      m_model(config, stats, stat_prefix),
      m_clock(clock),
      m_ratio(clock.frequencyHz(), config.clock_mhz * 1e6),
      m_latency_cycles(latency_cycles),
      m_busy(busy) {
  SC_THREAD(drive);
}

double ExactDramTiming::peakBytesPerCycle() const {
  return tpusim::peakBytesPerCycle(m_model.config()) * m_model.config().clock_mhz * 1e6 / m_clock.frequencyHz();
}

void ExactDramTiming::transport(const HbmAccess& access, sc_core::sc_time& delay) {
  wait(delay);
  const uint64_t now = m_clock.now();
  uint64_t id = m_transfers.size();
  if (m_free.empty()) {
    m_transfers.emplace_back();
  } else {
    id = m_free.back();
    m_free.pop_back();
  }
  Transfer& transfer = m_transfers[id];
  const uint64_t burst = burstBytes(m_model.config());
  const uint64_t arrival = m_ratio.dramAtOrAfter(now);
  forEachBurst(access, burst, [&](uint64_t address) {
    m_model.enqueue(DramRequest{address, burst, access.is_write, arrival, id});
    ++transfer.bursts_left;
  });
  if (transfer.bursts_left > 0) {
    if (m_active++ == 0) m_busy_since = now;
    m_arrival.notify();
    wait(transfer.done);
    if (--m_active == 0) m_busy.add(m_clock.now() - m_busy_since);
  }
  m_free.push_back(id);
  delay = m_clock.cycles(m_latency_cycles);
}

void ExactDramTiming::drive() {
  while (true) {
    if (m_model.idle()) {
      wait(m_arrival);
      continue;
    }
    const uint64_t wake = m_ratio.coreAtOrAfter(m_model.nextCompletionBound());
    const uint64_t now = m_clock.now();
    if (wake > now) wait(m_clock.cycles(wake - now));
    for (const DramCompletion& done : m_model.advanceTo(m_ratio.dramAtOrBefore(m_clock.now()))) {
      Transfer& transfer = m_transfers[done.id];
      if (--transfer.bursts_left == 0) transfer.done.notify();
    }
  }
}

}  // namespace tpusim
