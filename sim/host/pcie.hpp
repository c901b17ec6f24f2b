// One direction of the PCIe link between a host and its chip, at
// bandwidth-and-latency level: a first-come-first-served channel. A transfer
// of B bytes offered at t starts when the link is free, occupies it for
// ceil(B / pcie_gbps) and arrives pcie_latency_us after its last byte.
// Like sim/common/bandwidth_server.hpp, but in integer picoseconds: the link
// runs on no chip clock (host_config.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "sim/common/stats.hpp"
#include "sim/host/host_config.hpp"

namespace tpusim {

struct PcieTransfer {
  Picos start = 0;
  Picos busy = 0;
  Picos arrival = 0;  // start + busy + latency
};

class PcieLink {
 public:
  // Throws Error (kInvalidConfig) for a bandwidth that is not > 0 or a negative latency.
  PcieLink(double gbps, double latency_us, StatsRegistry& stats, const std::string& stat_prefix);

  PcieTransfer transfer(Picos offered, uint64_t bytes);

  Picos latency() const { return m_latency; }
  uint64_t busy() const { return m_busy.value(); }

 private:
  double m_gbps;
  Picos m_latency;
  Picos m_free = 0;
  Counter& m_bytes;
  Counter& m_busy;
  Counter& m_transfers;
};

}  // namespace tpusim
