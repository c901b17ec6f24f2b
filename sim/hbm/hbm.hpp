// The chip's HBM: a TLM-2.0 loosely-timed target for the DMA engines, timed by
// the model hbm.model names (hbm_timing.hpp): bandwidth and latency, or the
// command-level DRAM model, exact or memoized. What the payload carries:
// hbm_access.hpp.
#pragma once

#include <memory>

#include <tlm_utils/multi_passthrough_target_socket.h>
#include <systemc>
#include <tlm>

#include "configs/hardware.pb.h"
#include "sim/common/clock.hpp"
#include "sim/common/stats.hpp"
#include "sim/hbm/hbm_timing.hpp"

namespace tpusim {

class Hbm : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<Hbm> socket;

  Hbm(sc_core::sc_module_name name, const std::string& stat_prefix, const ClockDomain& clock,
      const config::HardwareConfig& hw, StatsRegistry& stats, const Counter& total_cycles);

 private:
  void b_transport(int initiator, tlm::tlm_generic_payload& payload, sc_core::sc_time& delay);

  Counter& m_bytes_read;
  Counter& m_bytes_written;
  Counter& m_busy;
  Counter& m_transfers;
  std::unique_ptr<HbmTiming> m_timing;
};

}  // namespace tpusim
