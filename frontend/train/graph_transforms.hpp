// Graph -> Graph passes over a built training step.
#pragma once

#include <vector>

#include "frontend/ir/graph.hpp"

namespace tpusim {

// Activation rematerialization, policy "all": `forward[i]` says whether op i is part of
// the forward pass. The result has the same forward ops; then each backward op, before
// it runs, gets every forward activation it reads recomputed by copies of the forward
// ops (named "<op>.remat"), from the checkpoints: the tensors no op produces (inputs,
// labels, weights, constants, optimizer state). A recomputed tensor is shared by the
// later backward ops. Values are bit-identical: the copies are the same ops on the same
// values. Tensor names are kept, except the copies'.
ir::Graph rematerialize(const ir::Graph& graph, const std::vector<bool>& forward);

}  // namespace tpusim
