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

Topology hostsTopology(TopologyKind kind, int chips_per_host, int hosts) {
  if (hosts < 1) throw Error(ErrorKind::kInvalidConfig, "a multi-host run needs at least one host, got " + std::to_string(hosts));
  if (chips_per_host < 1) {
    throw Error(ErrorKind::kInvalidConfig, "host.chips_per_host must be at least 1, got " + std::to_string(chips_per_host));
  }
  int a = 1;
  for (int d = 1; d * d <= chips_per_host; ++d) {
    if (chips_per_host % d == 0) a = d;
  }
  const int b = chips_per_host / a;
  switch (kind) {
    case TopologyKind::kRing: return Topology(kind, {chips_per_host}, 0, hosts);
    case TopologyKind::kTorus2d: return Topology(kind, {a, b}, 0, hosts);
    case TopologyKind::kTorus3d:
    case TopologyKind::kTwistedTorus3d: break;
  }
  return Topology(TopologyKind::kTorus3d, {a, b, 1}, 0, hosts);
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
