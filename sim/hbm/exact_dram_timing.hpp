// HBM at command level, every burst simulated: each transaction is split into
// bursts at its addresses (burst_walk.hpp) and queued in the DramModel, whose
// FR-FCFS controllers interleave the bursts of every transfer in flight; the
// transaction completes when its last burst does, plus hbm.latency_ns (the
// path between the DMA engines and the DRAM, which the DRAM model does not
// include).
//
// Time: the DramModel runs on its own clock and lags the core's: a driver
// thread advances it to the present only up to the next cycle at which a
// burst could complete (DramModel::nextCompletionBound), so no wake-up is
// wasted and a burst arriving meanwhile is never in its past. Cycles convert
// exactly (clock_ratio.hpp): a burst done at DRAM cycle d completes its
// transfer at the first core cycle at or after d.
// Busy cycles: core cycles with at least one transfer at the DRAM.
#pragma once

#include <deque>
#include <vector>

#include <systemc>

#include "sim/hbm/clock_ratio.hpp"
#include "sim/hbm/dram/dram_model.hpp"
#include "sim/hbm/hbm_timing.hpp"

namespace tpusim {

class ExactDramTiming : public sc_core::sc_module, public HbmTiming {
 public:
  SC_HAS_PROCESS(ExactDramTiming);
  ExactDramTiming(sc_core::sc_module_name name, const DramConfig& config, const ClockDomain& clock,
                  uint64_t latency_cycles, StatsRegistry& stats, const std::string& stat_prefix, Counter& busy);

  void transport(const HbmAccess& access, sc_core::sc_time& delay) override;
  double peakBytesPerCycle() const override;

 private:
  struct Transfer {
    uint64_t bursts_left = 0;
    sc_core::sc_event done;
  };

  void drive();

  DramModel m_model;
  const ClockDomain& m_clock;
  ClockRatio m_ratio;
  uint64_t m_latency_cycles;
  Counter& m_busy;
  std::deque<Transfer> m_transfers;  // by id; a deque keeps the events in place
  std::vector<uint64_t> m_free;      // ids of finished transfers, for reuse
  uint64_t m_active = 0;
  uint64_t m_busy_since = 0;
  sc_core::sc_event m_arrival;
};

}  // namespace tpusim
