// HBM at bandwidth-and-latency level (command-level DRAM timing comes later,
// docs/architecture.md): a TLM-2.0 loosely-timed target in front of a
// BandwidthServer. A transfer of B bytes that finds HBM idle takes
//   ceil(B / bytes_per_cycle) + latency_cycles.
#pragma once

#include <tlm_utils/multi_passthrough_target_socket.h>
#include <systemc>
#include <tlm>

#include "sim/common/bandwidth_server.hpp"
#include "sim/common/clock.hpp"
#include "sim/common/stats.hpp"

namespace tpusim {

class Hbm : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<Hbm> socket;

  Hbm(sc_core::sc_module_name name, const std::string& stat_prefix, const ClockDomain& clock, ChannelTiming timing,
      StatsRegistry& stats, const Counter& total_cycles);

 private:
  void b_transport(int initiator, tlm::tlm_generic_payload& payload, sc_core::sc_time& delay);

  const ClockDomain& m_clock;
  BandwidthServer m_channel;
  Counter& m_bytes_read;
  Counter& m_bytes_written;
  Counter& m_busy;
  Counter& m_transfers;
};

}  // namespace tpusim
