// Parameters of one directed ICI link and of the router in front of it.
//
// iciLinkConfigOf builds them from the hardware parameters (ici.link_bandwidth_gbps,
// ici.link_latency_ns, ici.router_latency_ns, ici.packet_bytes, ici.buffer_bytes; each preset cites its
// values or says why it assumes them). Tests build the struct by hand; a field left
// at zero fails validation where zero is not allowed.
#pragma once

#include <cstdint>

#include "sim/common/params.hpp"

namespace tpusim {

struct IciLinkConfig {
  double bandwidth_bytes_per_s = 0;  // one direction of one link
  double link_latency_ns = 0;        // wire and SerDes, first bit out to first bit in
  double router_latency_ns = 0;      // per hop, before the packet can use the output link
  uint64_t packet_bytes = 0;         // a message is serialized in packets of this size
  // The input buffer at the far end of the link: it holds buffer_bytes / packet_bytes
  // whole packets, and the sender needs a credit (a free slot) to send one.
  uint64_t buffer_bytes = 0;

  uint64_t bufferPackets() const { return packet_bytes > 0 ? buffer_bytes / packet_bytes : 0; }
};

// The link of `hw` (validated).
IciLinkConfig iciLinkConfigOf(const HardwareParams& hw);

// Zero or negative bandwidth, negative latency, a zero packet size or a buffer
// smaller than one packet is a one-line kInvalidConfig error.
void validateLinkConfig(const IciLinkConfig& config);

}  // namespace tpusim
