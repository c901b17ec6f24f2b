// A command-level HBM DRAM timing model driven by its caller (no SystemC):
// requests of one burst go to their pseudo-channel's FR-FCFS controller
// (pseudo_channel.hpp), whose commands obey the JEDEC-style timing rules of
// command_timer.hpp. Pseudo-channels share nothing, so each runs on its own
// up to the cycle the caller asks for. docs/memory.md describes the model.
//
// Time: cycles of DramConfig::clock_mhz. now() is the first cycle not yet
// simulated; advanceTo(T) simulates the commands of cycles now() .. T - 1 and
// returns every request whose last data beat ends at or before T.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/common/stats.hpp"
#include "sim/hbm/dram/address_map.hpp"
#include "sim/hbm/dram/pseudo_channel.hpp"

namespace tpusim {

struct DramRequest {
  uint64_t address = 0;  // physical byte address, below capacityBytes()
  uint64_t bytes = 0;    // exactly one burst: burstBytes(config)
  bool is_write = false;
  uint64_t arrival_cycle = 0;  // not before now(), and not before the previous request's
  uint64_t id = 0;             // the caller's, returned in the completion
};

// Appends the bursts covering [address, address + bytes) to out, each with
// the request's kind, arrival and id.
void splitIntoBursts(const DramRequest& request, uint64_t burst_bytes, std::vector<DramRequest>& out);

// Registers the command and row counters under prefix (reads, writes, activates,
// precharges, refreshes, row_hits, row_misses, row_conflicts, bytes,
// data_bus_busy_cycles) and the formula row_hit_rate.
DramCounters registerDramCounters(StatsRegistry& stats, const std::string& prefix);

class DramModel {
 public:
  // Checks the config (checkDramConfig) and registers the stats under prefix.
  DramModel(const DramConfig& config, StatsRegistry& stats, const std::string& prefix = "dram");

  // Throws Error (kInvalidInput) for a request of other than one burst, past
  // the capacity, or arriving before now() or before the previous request.
  void enqueue(const DramRequest& request);
  // The span stays valid until the next advanceTo or step.
  std::span<const DramCompletion> advanceTo(uint64_t cycle);
  std::span<const DramCompletion> step() { return advanceTo(m_now + 1); }
  // Nothing queued and nothing in flight.
  bool idle() const { return m_queued == 0 && m_in_flight.empty(); }

  // Appends every command issued from now on, per pseudo-channel in cycle
  // order, to log (nullptr stops). The log must outlive its use.
  void setCommandLog(std::vector<DramCommandRecord>* log);

  uint64_t now() const { return m_now; }
  // No request completes before this cycle (always after now()): the earliest
  // in flight, or a request issued at now() at its shortest (tCL or tCWL, plus
  // its burst). An advanceTo up to it returns nothing, whatever arrives meanwhile.
  uint64_t nextCompletionBound() const;
  const DramCounters& counters() const { return m_counters; }
  size_t queued() const { return m_queued; }
  size_t peakQueued() const { return m_peak_queued; }
  // Bytes the model holds, an estimate: itself, its pseudo-channels with their
  // bank states and reserved windows, the peak backlog beyond the windows, and
  // the peak in-flight entries (deque chunk slack not counted).
  size_t footprintBytes() const;

  const DramConfig& config() const { return m_config; }
  const AddressMap& addressMap() const { return m_map; }
  const CommandTimer& timer(uint64_t pseudo_channel) const { return m_channels[pseudo_channel].timer(); }
  // The flat pseudo-channel index of a decoded address.
  uint64_t pseudoChannelOf(const DramAddress& where) const {
    return where.channel * m_config.pseudo_channels + where.pseudo_channel;
  }

 private:
  DramConfig m_config;
  AddressMap m_map;
  uint64_t m_burst_bytes;
  uint64_t m_capacity;
  DramCounters m_counters;
  Counter* m_cycles;
  std::vector<PseudoChannel> m_channels;
  // Issued, not yet complete, as a min-heap on done_cycle (then id, for a
  // deterministic order); m_finished is the last advanceTo's answer.
  std::vector<DramCompletion> m_in_flight;
  std::vector<DramCompletion> m_finished;
  uint64_t m_now = 0;
  uint64_t m_last_arrival = 0;
  size_t m_queued = 0;
  size_t m_peak_queued = 0;
  size_t m_peak_in_flight = 0;
};

}  // namespace tpusim
