#include "sim/hbm/hbm.hpp"

namespace tpusim {

Hbm::Hbm(sc_core::sc_module_name name, const std::string& stat_prefix, const ClockDomain& clock, ChannelTiming timing,
         StatsRegistry& stats, const Counter& total_cycles)
    : sc_core::sc_module(name),
      socket("socket"),
      m_clock(clock),
      m_channel(timing),
      m_bytes_read(stats.counter(stat_prefix + ".bytes_read", "B", "bytes read from HBM")),
      m_bytes_written(stats.counter(stat_prefix + ".bytes_written", "B", "bytes written to HBM")),
      m_busy(stats.counter(stat_prefix + ".busy_cycles", "cycles", "cycles the HBM data bus was transferring")),
      m_transfers(stats.counter(stat_prefix + ".transfers", "count", "transfers served")) {
  socket.register_b_transport(this, &Hbm::b_transport);
  const Counter* busy = &m_busy;
  const Counter* total = &total_cycles;
  stats.formula(stat_prefix + ".utilization", "fraction",
                "busy cycles / total cycles: the fraction of peak bandwidth used", [busy, total] {
                  return total->value() == 0 ? 0.0
                                             : static_cast<double>(busy->value()) / static_cast<double>(total->value());
                });
}

void Hbm::b_transport(int, tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) {
  const uint64_t bytes = payload.get_data_length();
  const uint64_t arrival = m_clock.cyclesAt(sc_core::sc_time_stamp() + delay);
  const ChannelGrant grant = m_channel.request(arrival, bytes);
  delay = m_clock.cycles(grant.done_cycle) - sc_core::sc_time_stamp();
  (payload.is_read() ? m_bytes_read : m_bytes_written).add(bytes);
  m_busy.add(grant.busy_cycles);
  m_transfers.add();
  payload.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace tpusim
