#include "sim/hbm/dram_setup.hpp"

#include <cmath>
#include <cstdio>

#include "sim/common/error.hpp"
#include "sim/hbm/dram/dram_presets.hpp"

namespace tpusim {

DramConfig hbmDramConfig(const config::HbmConfig& hbm) {
  DramConfig config = dramPreset(hbm.dram_preset(), hbm.pin_gbps());
  config.stacks = static_cast<uint64_t>(hbm.stacks());
  const double capacity = std::ceil(hbm.capacity_gib() * 1024.0 * 1024.0 * 1024.0);
  const double row_stripe = static_cast<double>(pseudoChannelCount(config) * banksPerPseudoChannel(config) *
                                                config.columns * burstBytes(config));
  config.rows = static_cast<uint64_t>(std::ceil(capacity / row_stripe));
  const double peak = peakGBps(config);
  if (std::fabs(peak - hbm.bandwidth_gbps()) > 1e-3 * hbm.bandwidth_gbps()) {
    char line[320];
    std::snprintf(line, sizeof(line),
                  "hbm.bandwidth_gbps = %g but %lld stack(s) of %s at %g Gb/s per pin peak at %g GB/s; set "
                  "hbm.stacks or hbm.pin_gbps so that they agree within 0.1%%",
                  hbm.bandwidth_gbps(), static_cast<long long>(hbm.stacks()), hbm.dram_preset().c_str(), hbm.pin_gbps(),
                  peak);
    throw Error(ErrorKind::kInvalidConfig, line);
  }
  checkDramConfig(config);
  return config;
}

}  // namespace tpusim
