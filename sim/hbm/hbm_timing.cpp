#include "sim/hbm/hbm_timing.hpp"

#include "sim/common/error.hpp"
#include "sim/hbm/bandwidth_timing.hpp"
#include "sim/hbm/dram_setup.hpp"
#include "sim/hbm/exact_dram_timing.hpp"
#include "sim/hbm/memoized_dram_timing.hpp"

namespace tpusim {

std::unique_ptr<HbmTiming> makeHbmTiming(const config::HardwareConfig& hw, const ClockDomain& clock,
                                         StatsRegistry& stats, const std::string& stat_prefix, Counter& busy) {
  const config::HbmConfig& hbm = hw.hbm();
  const uint64_t latency = clock.cyclesCovering(hbm.latency_ns() * 1e-9);
  const std::string& model = hbm.model();
  if (model == "bandwidth") {
    return std::make_unique<BandwidthTiming>(
        clock, ChannelTiming{hbm.bandwidth_gbps() * 1e9 / clock.frequencyHz(), latency}, busy);
  }
  if (model == "dram") {
    return std::make_unique<ExactDramTiming>("dram", hbmDramConfig(hbm), clock, latency, stats, stat_prefix + ".dram",
                                             busy);
  }
  if (model == "dram_memoized") {
    return std::make_unique<MemoizedDramTiming>(hbmDramConfig(hbm), clock, latency, stats, stat_prefix + ".dram", busy);
  }
  throw Error(ErrorKind::kInvalidConfig, "unknown hbm.model '" + model + "' (choose bandwidth, dram or dram_memoized)");
}

}  // namespace tpusim
