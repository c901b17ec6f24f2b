// When a reference executor can let go of each tensor's value. A whole training step held to
// its end is gigabytes for a CNN (every activation, gradient and temporary); a caller that
// reads only some tensors afterwards (the step's outputs) names them, and every other value
// is released after the last op that reads it.
#pragma once

#include <cstdint>
#include <vector>

#include "frontend/ir/graph.hpp"

namespace tpusim::reference {

struct TensorLifetimes {
  std::vector<int> unread_feeds;                 // fed, never read, not kept: released before the first op
  std::vector<std::vector<int>> released_after;  // by op index: the values no later op reads, not kept
  // The most bytes held at once, each tensor at its dtype's size: while an op runs, its
  // output, its inputs and every value made or fed before it and not yet released.
  uint64_t peak_bytes = 0;
};

// By tensor id: whether `keep` names it. Throws Error (kInternal) for an id the graph lacks.
std::vector<bool> keptTensors(const ir::Graph& graph, const std::vector<int>& keep);

// The lifetimes of `graph`'s tensors when the caller keeps the tensors `keep` (ids) to the end.
// Throws as keptTensors() does.
TensorLifetimes tensorLifetimes(const ir::Graph& graph, const std::vector<int>& keep);

}  // namespace tpusim::reference
