// How the chip's HBM times a transaction; Hbm (hbm.hpp) holds one, chosen by
// hbm.model (makeHbmTiming, hbm_timing.cpp):
//   bandwidth      one FCFS channel at hbm.bandwidth_gbps plus hbm.latency_ns
//   dram           the command-level DRAM model, every burst simulated
//   dram_memoized  a transfer's time alone on the DRAM, simulated once per kind
//                  and reused, transfers sharing one FCFS channel
//
// Contract: transport() is called from the initiator's thread with the
// transaction arriving at sc_time_stamp() + delay; it returns with delay set
// so that the transaction completes at sc_time_stamp() + delay (whole core
// cycles), having added the cycles the HBM was busy with it to the busy
// counter. It may wait (the exact DRAM model returns only once the last burst
// is done).
#pragma once

#include <memory>
#include <string>

#include <systemc>

#include "configs/hardware.pb.h"
#include "sim/common/clock.hpp"
#include "sim/common/stats.hpp"
#include "sim/hbm/hbm_access.hpp"

namespace tpusim {

class HbmTiming {
 public:
  virtual ~HbmTiming() = default;
  virtual void transport(const HbmAccess& access, sc_core::sc_time& delay) = 0;
  // Peak bytes per core cycle, the denominator of the bandwidth utilization.
  virtual double peakBytesPerCycle() const = 0;
};

// The timing hw.hbm().model() names. DRAM models register their counters
// under `stat_prefix`.dram and are checked against hbm.bandwidth_gbps
// (dram_setup.hpp). `busy` is the HBM's busy-cycles counter.
std::unique_ptr<HbmTiming> makeHbmTiming(const config::HardwareConfig& hw, const ClockDomain& clock,
                                         StatsRegistry& stats, const std::string& stat_prefix, Counter& busy);

}  // namespace tpusim
