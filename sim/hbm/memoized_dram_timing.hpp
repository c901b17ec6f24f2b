// HBM at command level, memoized (docs/architecture.md, decision 4): a
// transfer's time alone on an idle DRAM (every bank closed, no refresh due)
// is simulated once per kind and reused. The kind: its rows, row bytes and
// row stride, read or write, and its address modulo the DRAM's interleave
// (AddressMap::interleaveBytes), which sets which channels its bursts meet in
// which order. It is simulated at that offset from address 0.
//
// From one simulation, at the DRAM clock: T, arrival to the last burst done;
// F, arrival to the first. Transfers share one FCFS channel, each holding it
// for max(T - F, its bursts at the peak rate): a transfer that finds it free
// at core cycle s (DRAM cycle S at or after s) completes at the first core
// cycle at or after S + T, plus hbm.latency_ns. So a transfer behind another
// completes T - F after it, as a stream through the exact model does.
//
// What this leaves out: open rows left by other transfers (each starts on
// closed banks), refresh outside a transfer, and the interleaving of
// overlapping transfers' bursts. The counters (row hits, activates, ...) are
// the simulated ones, added once per transfer.
#pragma once

#include <map>
#include <tuple>

#include "sim/common/bandwidth_server.hpp"
#include "sim/hbm/clock_ratio.hpp"
#include "sim/hbm/dram/dram_model.hpp"
#include "sim/hbm/hbm_timing.hpp"

namespace tpusim {

class MemoizedDramTiming : public HbmTiming {
 public:
  MemoizedDramTiming(const DramConfig& config, const ClockDomain& clock, uint64_t latency_cycles, StatsRegistry& stats,
                     const std::string& stat_prefix, Counter& busy);

  void transport(const HbmAccess& access, sc_core::sc_time& delay) override;
  double peakBytesPerCycle() const override;

  // Transfers simulated (memo misses) and reused (hits).
  uint64_t simulated() const { return m_simulated.value(); }

 private:
  // rows, row bytes, row stride, address modulo the interleave, write.
  using Kind = std::tuple<uint64_t, uint64_t, uint64_t, uint64_t, bool>;
  static constexpr size_t kCounters = 10;
  struct Alone {
    uint64_t last = 0;       // T: DRAM cycles from arrival to the last burst done
    uint64_t occupancy = 0;  // DRAM cycles it holds the channel
    uint64_t counts[kCounters] = {};
  };

  const Alone& alone(const HbmAccess& access, uint64_t phase);

  DramConfig m_config;
  uint64_t m_interleave;
  const ClockDomain& m_clock;
  ClockRatio m_ratio;
  uint64_t m_latency_cycles;
  Counter& m_busy;
  BandwidthServer m_channel;  // in DRAM cycles
  DramCounters m_counters;
  Counter& m_simulated;
  Counter& m_reused;
  std::map<Kind, Alone> m_memo;
};

}  // namespace tpusim
