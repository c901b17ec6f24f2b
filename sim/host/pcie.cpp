#include "sim/host/pcie.hpp"

#include <algorithm>

namespace tpusim {

PcieLink::PcieLink(double gbps, double latency_us, StatsRegistry& stats, const std::string& stat_prefix)
    : m_gbps(gbps),
      m_latency(0),
      m_bytes(stats.counter(stat_prefix + ".bytes", "bytes", "bytes moved over this direction of PCIe")),
      m_busy(stats.counter(stat_prefix + ".busy_ps", "ps", "time this direction of PCIe was moving bytes")),
      m_transfers(stats.counter(stat_prefix + ".transfers", "count", "PCIe transfers in this direction")) {
  stats.unit(stat_prefix, UnitKind::kPcie);
  requirePositive(gbps, "host.pcie_gbps", "GB/s");
  requireNonNegative(latency_us, "host.pcie_latency_us", "us");
  m_latency = picosFromMicros(latency_us);
}

PcieTransfer PcieLink::transfer(Picos offered, uint64_t bytes) {
  PcieTransfer t;
  t.start = std::max(offered, m_free);
  t.busy = transferPicos(bytes, m_gbps);
  m_free = t.start + t.busy;
  t.arrival = m_free + m_latency;
  m_bytes.add(bytes);
  m_busy.add(t.busy);
  m_transfers.add();
  return t;
}

}  // namespace tpusim
