#include "sim/interconnect/dcn.hpp"

#include <cmath>
#include <string>

#include "sim/common/error.hpp"

namespace tpusim {

DcnLinkConfig dcnLinkConfigOf(const HardwareParams& hw) {
  const config::DcnConfig& dcn = hw.config().dcn();
  DcnLinkConfig link;
  link.bandwidth_bytes_per_s = dcn.host_bandwidth_gbps() * 1e9;
  link.latency_ns = dcn.latency_us() * 1e3;
  validateDcnConfig(link);
  return link;
}

void validateDcnConfig(const DcnLinkConfig& config) {
  if (!(config.bandwidth_bytes_per_s > 0) || !std::isfinite(config.bandwidth_bytes_per_s)) {
    throw Error(ErrorKind::kInvalidConfig, "DCN host bandwidth must be positive, got " +
                                               std::to_string(config.bandwidth_bytes_per_s) + " bytes/s");
  }
  if (!(config.latency_ns >= 0) || !std::isfinite(config.latency_ns)) {
    throw Error(ErrorKind::kInvalidConfig, "DCN latency must be >= 0");
  }
}

}  // namespace tpusim
