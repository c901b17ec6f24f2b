// Parameters of one directed ICI link and of the router in front of it.
//
// The bandwidth default is configs/hardware.proto's ici.link_bandwidth_gbps
// default (50 GB/s per direction, TPUv4: Jouppi et al., ISCA 2023). TPU ICI
// latencies and packet sizes are not published, so the other defaults are
// assumed: 100 ns of wire and SerDes, the order of a few-metre copper or
// optical link with its serializers; 50 ns per router, tens of cycles of a
// ~1 GHz switch pipeline; 4 KiB packets, small beside the MiB-sized messages
// of gradient collectives. Every test sets its own values. The struct is
// filled by its caller; the values are not yet ici.* parameters of
// configs/hardware.proto (docs/interconnect.md, "Not yet").
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
