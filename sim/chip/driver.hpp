// The simulation driver: runs a validated Program on the pod of a preset in
// a fresh SystemC context, so that one process can run many simulations
// (tests, sweeps, the Python module) one after another. A Program with
// replicas runs data parallel on its ICI slice (sim/chip/pod.hpp); its network
// stats are registered under "ici." when the run ends.
#pragma once

#include <cstdint>
#include <memory>

#include "sim/common/params.hpp"
#include "sim/common/stats.hpp"
#include "sim/common/timeline.hpp"
#include "traces/program.pb.h"

namespace tpusim {

struct SimResult {
  uint64_t total_cycles = 0;
  double clock_hz = 0;
  std::unique_ptr<StatsRegistry> stats;  // owns every counter the units registered
  Timeline timeline;
};

// Validates `program` against `hw` (throwing Error on a mismatch), then simulates it.
SimResult simulate(const program::Program& program, const HardwareParams& hw);

}  // namespace tpusim
