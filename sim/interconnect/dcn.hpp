// The data-center network (DCN) between hosts (docs/interconnect.md, "DCN").
//
// Each slice of a Topology is one host's chips (host.chips_per_host), joined to
// the others only through the host's NIC: an uplink and a downlink of
// dcn.host_bandwidth_gbps each, into a non-blocking switch fabric. The NIC links
// are the contended resources; the switch adds no queueing. A transfer between
// chips on two hosts takes two hops in the Network: its source host's uplink,
// then its destination host's downlink. Chips reach their host's NIC directly
// (the PCIe hop between chip and host is not modelled). The one-way latency
// dcn.latency_us is charged once, on the uplink, so uncontended
//   T = latency + ser(packet) + ser(B)   (ser at the NIC's bandwidth).
#pragma once

#include <cstdint>

#include "sim/common/params.hpp"
#include "sim/interconnect/topology.hpp"

namespace tpusim {

struct DcnLinkConfig {
  double bandwidth_bytes_per_s = 0;  // one host's NIC, one direction
  double latency_ns = 0;             // one way, host to host
};

// From dcn.host_bandwidth_gbps and dcn.latency_us (validated).
DcnLinkConfig dcnLinkConfigOf(const HardwareParams& hw);

// `hosts` hosts of `chips_per_host` chips, each an ICI block of the preset's kind
// (a twisted torus kind gives a plain 3D torus block): c = a x b with a the largest
// divisor of c up to sqrt(c), as a x b x 1 (3D), a x b (2D) or c (ring). tpuv4's
// 4 chips per host are 2x2x1, the v4-8 slice. Zero hosts is a one-line error.
Topology hostsTopology(TopologyKind kind, int chips_per_host, int hosts);

// Zero, negative or non-finite bandwidth, or a negative latency, is a one-line kInvalidConfig error.
void validateDcnConfig(const DcnLinkConfig& config);

}  // namespace tpusim
