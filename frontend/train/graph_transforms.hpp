// Graph -> Graph passes over a built training step.
#pragma once

#include <string_view>
#include <vector>

#include "frontend/ir/graph.hpp"

namespace tpusim {

// Activation rematerialization, policy "all", checkpointed at layer boundaries (as
// Megatron-LM's full recomputation keeps each transformer layer's input): `forward[i]`
// says whether op i is part of the forward pass, `layer[i]` its layer (any ids; -1 for
// none). The checkpoints are the tensors no op produces (inputs, labels, weights,
// constants, optimizer state), the graph's outputs, and every forward activation that a
// forward op of another layer reads. The result has the same forward ops; then each
// backward op, before it runs, gets every other forward activation it reads recomputed by
// copies of the forward ops (named "<op>.remat") from the checkpoints, which never go
// back past the layer's inputs; a recomputed tensor is shared by the later backward ops.
// So a layer's activations live again only around its own backward. Values are
// bit-identical: the copies are the same ops on the same values. Tensor names are kept,
// except the copies'.
ir::Graph rematerialize(const ir::Graph& graph, const std::vector<bool>& forward, const std::vector<int>& layer);

// Whether an op (or a Program instruction) named `op_name` is such a recomputation.
bool isRecomputation(std::string_view op_name);

}  // namespace tpusim
