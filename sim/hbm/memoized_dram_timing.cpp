#include "sim/hbm/memoized_dram_timing.hpp"

#include <algorithm>
#include <array>

#include "sim/hbm/burst_walk.hpp"

namespace tpusim {

namespace {

std::array<Counter*, 10> countersOf(const DramCounters& k) {
  return {k.reads,    k.writes,     k.activates,     k.precharges, k.refreshes,
          k.row_hits, k.row_misses, k.row_conflicts, k.bytes,      k.bus_busy_cycles};
}

}  // namespace

MemoizedDramTiming::MemoizedDramTiming(const DramConfig& config, const ClockDomain& clock, uint64_t latency_cycles,
                                       StatsRegistry& stats, const std::string& stat_prefix, Counter& busy)
    : m_config((checkDramConfig(config), config)),
      m_interleave(AddressMap(config).interleaveBytes()),
      m_clock(clock),
      m_ratio(clock.frequencyHz(), config.clock_mhz * 1e6),
      m_latency_cycles(latency_cycles),
      m_busy(busy),
      m_channel(ChannelTiming{tpusim::peakBytesPerCycle(config), 0}),
      m_counters(registerDramCounters(stats, stat_prefix)),
      m_simulated(stats.counter(stat_prefix + ".memo_simulated", "transfers",
                                "transfers simulated alone on the DRAM (memo misses)")),
      m_reused(stats.counter(stat_prefix + ".memo_reused", "transfers", "transfers that reused a simulated time")) {}

double MemoizedDramTiming::peakBytesPerCycle() const {
  return tpusim::peakBytesPerCycle(m_config) * m_config.clock_mhz * 1e6 / m_clock.frequencyHz();
}

const MemoizedDramTiming::Alone& MemoizedDramTiming::alone(const HbmAccess& access, uint64_t phase) {
  const Kind kind{access.rows, access.row_bytes, access.row_stride, phase, access.is_write};
  auto found = m_memo.find(kind);
  if (found != m_memo.end()) {
    m_reused.add();
    return found->second;
  }
  m_simulated.add();
  StatsRegistry scratch;
  DramModel model(m_config, scratch, "alone");
  HbmAccess at = access;
  at.address = phase;
  const uint64_t burst = burstBytes(m_config);
  uint64_t bursts = 0;
  forEachBurst(at, burst, [&](uint64_t address) {
    model.enqueue(DramRequest{address, burst, at.is_write, 0, bursts++});
  });
  uint64_t first = UINT64_MAX, last = 0;
  while (!model.idle()) {
    for (const DramCompletion& done : model.advanceTo(model.nextCompletionBound())) {
      first = std::min(first, done.done_cycle);
      last = std::max(last, done.done_cycle);
    }
  }
  Alone result;
  if (bursts > 0) {
    result.last = last;
    const uint64_t at_peak = BandwidthServer::busyCycles(bursts * burst, m_channel.timing());
    result.occupancy = std::max(last - first, at_peak);
  }
  const auto counted = countersOf(model.counters());
  for (size_t i = 0; i < kCounters; ++i) result.counts[i] = counted[i]->value();
  return m_memo.emplace(kind, result).first->second;
}

void MemoizedDramTiming::transport(const HbmAccess& access, sc_core::sc_time& delay) {
  const uint64_t arrival = m_clock.cyclesAt(sc_core::sc_time_stamp() + delay);
  const Alone& time = alone(access, access.address % m_interleave);
  const ChannelGrant grant = m_channel.hold(m_ratio.dramAtOrAfter(arrival), time.occupancy);
  const uint64_t start = m_ratio.coreAtOrAfter(grant.start_cycle);  // not before the arrival
  m_busy.add(m_ratio.coreAtOrAfter(grant.start_cycle + grant.busy_cycles) - start);
  const uint64_t done = m_ratio.coreAtOrAfter(grant.start_cycle + time.last) + m_latency_cycles;
  const auto counters = countersOf(m_counters);
  for (size_t i = 0; i < kCounters; ++i) counters[i]->add(time.counts[i]);
  delay = m_clock.cycles(done) - sc_core::sc_time_stamp();
}

}  // namespace tpusim
