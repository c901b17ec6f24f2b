// Data parallelism as TPUStrategy runs it: every replica computes the gradients of
// its own batch, and each weight gradient is all-reduced (summed) across the
// replicas before the optimizer reads it, so every replica applies the same update.
//
// The pass appends an AllReduce of `replicas` on each gradient an optimizer update
// reads (SgdUpdate, or OptimizerUpdate's gradient operand), places it right after the
// op that produces the gradient, so that the collective can overlap the rest of the
// backward pass, and makes every reader of the gradient read the reduced one. With one
// replica (or no optimizer: inference) the graph is returned unchanged.
#pragma once

#include <cstdint>

#include "frontend/ir/graph.hpp"

namespace tpusim {

// The replicas are `replicas` chips `stride` apart: with tensor parallelism of degree T the
// data-parallel group of chip 0 is chips 0, T, 2T, ... (frontend/passes/tensor_parallel.hpp).
ir::Graph allReduceGradients(const ir::Graph& graph, int64_t replicas, int64_t stride = 1);

}  // namespace tpusim
