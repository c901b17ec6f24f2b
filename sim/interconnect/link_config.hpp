// Parameters of one directed ICI link and of the router in front of it.
//
// The bandwidth default is configs/hardware.proto's ici.link_bandwidth_gbps
// default (50 GB/s per direction). The latency and packet defaults are
// illustrative placeholders, not published figures: tests and callers set
// them. This is a plain struct until the parameters move into IciConfig.
#pragma once

#include <cstdint>

namespace tpusim {

struct IciLinkConfig {
  double bandwidth_bytes_per_s = 50e9;  // one direction of one link
  double link_latency_ns = 100;         // wire and SerDes, first bit out to first bit in
  double router_latency_ns = 50;        // per hop, before the packet can use the output link
  uint64_t packet_bytes = 4096;         // a message is serialized in packets of this size
};

// Zero or negative bandwidth, negative latency or a zero packet size is a
// one-line kInvalidConfig error.
void validateLinkConfig(const IciLinkConfig& config);

}  // namespace tpusim
