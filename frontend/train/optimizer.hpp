// Appends the optimizer's update of every trained weight to a training graph:
// SGD, momentum (optionally Nesterov), Adam / AdamW, Adagrad and LARS, each as
// OptimizerUpdate ops with its state as graph inputs the update overwrites.
#pragma once

#include <utility>
#include <vector>

#include "frontend/ir/graph.hpp"

namespace tpusim {

// `updates`: (weight, gradient) pairs. Plain SGD without warmup or weight decay is one
// SgdUpdate per weight (no step counter); every other configuration adds an int64
// optimizer state "step" (updates done so far), read by every update and then
// incremented, and per weight the states "<weight>.velocity" (momentum, LARS),
// "<weight>.m" and "<weight>.v" (Adam) or "<weight>.h" (Adagrad), all zeros at step 0.
void appendOptimizer(ir::Graph& graph, const std::vector<std::pair<int, int>>& updates,
                     const ir::OptimizerConfig& config);

}  // namespace tpusim
