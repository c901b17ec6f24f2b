#include "sim/interconnect/link_config.hpp"

#include <cmath>
#include <string>

#include "sim/common/error.hpp"

namespace tpusim {

IciLinkConfig iciLinkConfigOf(const HardwareParams& hw) {
  const config::IciConfig& ici = hw.config().ici();
  IciLinkConfig link;
  link.bandwidth_bytes_per_s = ici.link_bandwidth_gbps() * 1e9;
  link.link_latency_ns = ici.link_latency_ns();
  link.router_latency_ns = ici.router_latency_ns();
  link.packet_bytes = static_cast<uint64_t>(ici.packet_bytes());
  link.buffer_bytes = static_cast<uint64_t>(ici.buffer_bytes());
  validateLinkConfig(link);
  return link;
}

void validateLinkConfig(const IciLinkConfig& config) {
  if (!(config.bandwidth_bytes_per_s > 0) || !std::isfinite(config.bandwidth_bytes_per_s)) {
    throw Error(ErrorKind::kInvalidConfig, "ICI link bandwidth must be positive, got " +
                                               std::to_string(config.bandwidth_bytes_per_s) + " bytes/s");
  }
  if (!(config.link_latency_ns >= 0) || !(config.router_latency_ns >= 0)) {
    throw Error(ErrorKind::kInvalidConfig, "ICI link and router latencies must be >= 0 ns");
  }
  if (config.packet_bytes == 0) throw Error(ErrorKind::kInvalidConfig, "ICI packet size must be at least 1 byte");
  if (config.buffer_bytes < config.packet_bytes) {
    throw Error(ErrorKind::kInvalidConfig, "ICI router input buffer of " + std::to_string(config.buffer_bytes) +
                                               " bytes must hold at least one packet of " +
                                               std::to_string(config.packet_bytes) + " bytes");
  }
}

}  // namespace tpusim
