// CMEM, the chip's on-chip memory between the DMA engines and HBM (TPU v4:
// 128 MiB, Jouppi et al., ISCA 2023): a TLM-2.0 loosely-timed module with a
// target socket for the DMA engines and an initiator socket to HBM. It reads
// only each transaction's address, length and stride (sim/hbm/hbm_access.hpp);
// a strided transfer's rows are looked up row by row. One port at cmem.bandwidth_gbps,
// first come first served, serves every engine (a BandwidthServer).
//
// Cache mode (set-associative, LRU, write-back with write-allocate), for a
// transfer of B bytes arriving at cycle t:
//   read:  each line it touches is looked up. The hit lines' bytes are served by
//          the port from t: ceil(hit bytes / CMEM bytes per cycle) + hit latency.
//          Each run of consecutive missed lines is one HBM read of those whole
//          lines, sent at t; when the last arrives, the port writes them into
//          CMEM, and the engine receives them as they are written (the fill,
//          ceil(missed lines x line_bytes / CMEM bytes per cycle), no second
//          latency). Cold, B line-aligned: HBM time + fill.
//   write: the port takes the bytes from t (ceil(B / CMEM bytes per cycle) + hit
//          latency); missed lines are allocated without reading HBM (DMA stores
//          write whole tiles; a partial edge line is taken as written whole).
//   Either way a replaced dirty line is written back: each run of consecutive
//   victims is one HBM write, sent at t, and the transfer completes when the
//   last of its parts does. Lines dirty when the step ends stay in CMEM (their
//   bytes are the dirty_bytes stat), as they would for the next step.
// Software mode: buffers the compiler marked cmem_resident are in CMEM from the
// start (weights and optimizer state persist across steps); a transfer whose
// first byte lies in one is served by the port alone, like a hit; every other
// transfer goes to HBM unchanged. docs/memory.md ("CMEM") works the examples.
#pragma once

#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>

#include <memory>
#include <systemc>
#include <tlm>
#include <utility>
#include <vector>

#include "sim/common/bandwidth_server.hpp"
#include "sim/common/clock.hpp"
#include "sim/common/stats.hpp"
#include "sim/hbm/cmem_config.hpp"
#include "sim/hbm/cmem_tags.hpp"
#include "sim/hbm/hbm_access.hpp"
#include "traces/program.pb.h"

namespace tpusim {

class Cmem : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<Cmem> socket;  // from the DMA engines
  tlm_utils::simple_initiator_socket<Cmem> hbm;             // to HBM

  // `geometry` from cmemGeometryOf, mode cache or software. Software mode reads the
  // resident buffers from `program` and throws Error (kResource) when they do not fit.
  Cmem(sc_core::sc_module_name name, const std::string& stat_prefix, const ClockDomain& clock,
       const CmemGeometry& geometry, const program::ChipProgram& program, StatsRegistry& stats,
       const Counter& total_cycles);

 private:
  struct Run {  // consecutive lines [first, first + count)
    uint64_t first;
    uint64_t count;
  };

  void b_transport(int initiator, tlm::tlm_generic_payload& payload, sc_core::sc_time& delay);
  uint64_t cacheRead(const HbmAccess& access, uint64_t arrival);
  uint64_t cacheWrite(const HbmAccess& access, uint64_t arrival);
  bool resident(uint64_t address) const;
  // Lines touched by a transfer's rows, for the hit and miss counts of software mode.
  uint64_t linesOf(const HbmAccess& access) const;
  // Sends each run to HBM at `arrival`; returns the cycle the last one completes (arrival if none).
  uint64_t toHbm(const std::vector<Run>& runs, tlm::tlm_command command, uint64_t arrival);
  // Appends `line` to the last run if it follows it, else starts a run.
  void extend(std::vector<Run>& runs, uint64_t line) const;
  // The port from `arrival`: returns the cycle the last byte is through it.
  uint64_t port(uint64_t arrival, uint64_t bytes);

  const ClockDomain& m_clock;
  CmemGeometry m_geometry;
  uint64_t m_hit_latency;  // cycles
  BandwidthServer m_port;
  std::unique_ptr<CmemTags> m_tags;                       // cache mode
  std::vector<std::pair<uint64_t, uint64_t>> m_resident;  // software mode: [begin, end) byte ranges, sorted
  std::vector<Run> m_missed;                              // per transfer, kept to reuse their memory
  std::vector<Run> m_victims;
  tlm::tlm_generic_payload m_hbm_payload;

  Counter& m_hits;
  Counter& m_misses;
  Counter& m_bytes_from_cmem;
  Counter& m_bytes_to_cmem;
  Counter& m_bytes_from_hbm;
  Counter& m_bytes_to_hbm;
  Counter& m_written_back;
  Counter& m_lines_dirtied;
  Counter& m_busy;
  Counter& m_transfers;
};

}  // namespace tpusim
