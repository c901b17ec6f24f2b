// The model FLOPs of a graph: what the model's mathematics needs, as model-FLOPs
// utilization counts it (Chowdhery et al. 2022, "PaLM", Appendix B): 2 flops per
// multiply-add of every matmul and convolution, forward and backward, and nothing for
// recomputation (rematerialized ops, named "<op>.remat"), MXU padding or the vector
// unit's work. Measured on the graph before tensor-parallel splits, it is one
// data-parallel replica's share of the step.
#pragma once

#include <cstdint>

#include "frontend/ir/graph.hpp"

namespace tpusim {

uint64_t modelFlops(const ir::Graph& graph);

// One op's share (0 for all but MatMul, Conv and the convolution gradients).
uint64_t modelFlopsOf(const ir::Graph& graph, const ir::Op& op);

}  // namespace tpusim
