#include "sim/hbm/hbm.hpp"

namespace tpusim {

Hbm::Hbm(sc_core::sc_module_name name, const std::string& stat_prefix, const ClockDomain& clock,
         const config::HardwareConfig& hw, StatsRegistry& stats, const Counter& total_cycles)
    : sc_core::sc_module(name),
      socket("socket"),
      m_bytes_read(stats.counter(stat_prefix + ".bytes_read", "B", "bytes read from HBM")),
      m_bytes_written(stats.counter(stat_prefix + ".bytes_written", "B", "bytes written to HBM")),
      m_busy(stats.counter(stat_prefix + ".busy_cycles", "cycles",
                           "bandwidth model: cycles the data bus was transferring; dram: cycles with a transfer at "
                           "the DRAM; dram_memoized: cycles the shared channel was held")),
      m_transfers(stats.counter(stat_prefix + ".transfers", "count", "transfers served")),
      m_timing(makeHbmTiming(hw, clock, stats, stat_prefix, m_busy)) {
  stats.unit(stat_prefix, UnitKind::kHbm);
  socket.register_b_transport(this, &Hbm::b_transport);
  const Counter* busy = &m_busy;
  const Counter* total = &total_cycles;
  stats.formula(stat_prefix + ".utilization", "fraction", "busy cycles / total cycles", [busy, total] {
    return total->value() == 0 ? 0.0 : static_cast<double>(busy->value()) / static_cast<double>(total->value());
  });
  const Counter* read = &m_bytes_read;
  const Counter* written = &m_bytes_written;
  const double peak = m_timing->peakBytesPerCycle();
  stats.formula(stat_prefix + ".bandwidth_utilization", "fraction",
                "bytes read and written / (peak bytes per cycle x total cycles)", [read, written, total, peak] {
                  return total->value() == 0 ? 0.0
                                             : static_cast<double>(read->value() + written->value()) /
                                                   (peak * static_cast<double>(total->value()));
                });
}

void Hbm::b_transport(int, tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) {
  const HbmAccess access = accessOf(payload);
  m_timing->transport(access, delay);
  (access.is_write ? m_bytes_written : m_bytes_read).add(access.bytes());
  m_transfers.add();
  payload.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace tpusim
