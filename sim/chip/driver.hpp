// The simulation driver: runs a validated Program on the pod of a preset in
// a fresh SystemC context, so that one process can run many simulations
// (tests, sweeps, the Python module) one after another. A Program with
// replicas runs data parallel on its ICI slice (sim/chip/pod.hpp); its network
// totals are registered under "ici." when the run ends, and every link's
// counters are in SimResult::ici (per-link stats for thousands of links would
// swamp the registry).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/common/params.hpp"
#include "sim/common/stats.hpp"
#include "sim/common/timeline.hpp"
#include "sim/interconnect/network.hpp"
#include "sim/interconnect/ocs.hpp"
#include "traces/program.pb.h"

namespace tpusim {

// The network of a run on an ICI slice, every chip's links.
struct IciResult {
  Topology topology;
  IciLinkConfig link;
  std::vector<LinkStats> links;  // by LinkId (Topology::linkId); slots of size-1 dimensions stay zero
  uint64_t makespan_ps = 0;      // when the last transfer delivered
  OcsConfig ocs_config;
  OcsWiring ocs;  // the slice's cubes and links through optical circuit switches
  // Multi-host: the DCN and each host's NIC links, uplink then downlink, by host.
  std::optional<DcnLinkConfig> dcn;
  std::vector<LinkStats> dcn_links;
  // The slice the network model simulated: `topology`, or its quotient by symmetry
  // (sim/interconnect/slice_network.hpp), and why not the quotient ("" when it was).
  Topology simulated;
  std::string full_reason;
};

struct SimResult {
  uint64_t total_cycles = 0;
  double clock_hz = 0;
  std::unique_ptr<StatsRegistry> stats;  // owns every counter the units registered
  Timeline timeline;
  std::optional<IciResult> ici;  // runs on a slice of two or more chips
};

// How far a running simulation is: chip 0's instructions retired of its total,
// and the simulated cycles so far.
struct SimProgress {
  uint64_t retired = 0;
  uint64_t instructions = 0;
  uint64_t cycles = 0;
};
using ProgressCallback = std::function<void(const SimProgress&)>;

// Simulated cycles between two progress reports.
inline constexpr uint64_t kProgressSliceCycles = uint64_t{1} << 20;

// Validates `program` against `hw` (throwing Error on a mismatch), then simulates it.
// With `progress`, SystemC runs in windows of at least `slice_cycles` and the callback
// hears once at the start (nothing retired, cycle 0) and after each window (the last
// report has every instruction retired); the results are the same bit for bit.
SimResult simulate(const program::Program& program, const HardwareParams& hw, const ProgressCallback& progress = {},
                   uint64_t slice_cycles = kProgressSliceCycles);

}  // namespace tpusim
