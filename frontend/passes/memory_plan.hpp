// Memory planning: where each tensor lives in HBM during one training or
// inference step, with buffers reused once their last reader has run.
//
// A tensor is live from the op that writes it to the last op that reads it
// (a view or an aliasing update extends the storage it shares). Inputs,
// weights and constants are live for the whole step, being there before it
// starts and (weights) after it ends; so are the graph's outputs. Offsets are
// assigned greedily, largest tensor first, each at the lowest offset that no
// tensor live at the same time occupies. The plan is deterministic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "frontend/ir/graph.hpp"

namespace tpusim {

struct MemoryPlan {
  // Per tensor id; an alias has its storage's values.
  std::vector<uint64_t> offset;
  std::vector<int> storage;       // the tensor whose storage it uses (itself unless an alias)
  std::vector<int> first_op;      // index of the op that writes it, -1 when live from the start
  std::vector<int> last_op;       // index of the last op that reads it, ops().size() when live to the end
  std::vector<bool> reuses;       // its storage overlaps a tensor that died before it was written
  uint64_t peak_bytes = 0;        // highest offset + size: the HBM the step needs
  uint64_t live_peak_bytes = 0;   // most bytes live at once (a lower bound on peak_bytes)
  int live_peak_op = -1;          // the op at which live_peak_bytes is reached
  uint64_t persistent_bytes = 0;  // inputs, weights, constants and outputs
  uint64_t unplanned_bytes = 0;   // the sum of every tensor's size: the HBM a plan without reuse needs
};

MemoryPlan planMemory(const ir::Graph& graph);

// The plan as text: its totals, then each planned tensor's offset, size and live ops.
std::string describePlan(const ir::Graph& graph, const MemoryPlan& plan);

}  // namespace tpusim
