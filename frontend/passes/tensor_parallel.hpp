// Tensor parallelism, Megatron-style (Shoeybi et al., "Megatron-LM: Training
// Multi-Billion Parameter Language Models Using Model Parallelism", 2019, section 3):
// the weights of matmul pairs are split over the `tp` chips of a group.
//
//   column-parallel  the first matmul of a pair: each chip holds 1/tp of the weight's
//                    output columns (and of the bias added to them) and computes that
//                    slice of the activations; nothing is communicated forward.
//   row-parallel     the matmul that reads the split activations: each chip holds the
//                    matching 1/tp of the weight's input rows and computes a partial
//                    sum of the whole output, all-reduced over the group forward.
// Backward, the same propagation splits the gradients: the weight gradients come out
// split like their weights, and the input gradient of a column-parallel matmul is a
// partial sum, all-reduced over the group. Every chip of a group keeps the rest whole
// (layer norms, embeddings, unpaired matmuls), computing it redundantly.
//
// Which matmuls: the forward matmuls with a weight operand, taken in op order, grouped
// by the activation they read (a transformer's Q, K and V read one input and are tried
// together). A group is made column-parallel when the splits it starts propagate through
// the whole training graph (frontend/passes/split_propagation.hpp) to the matmuls that
// contract over them, which become row-parallel; otherwise, and when a dimension does
// not divide by tp, it stays whole (replicated). So on the MLP fc1 is column- and fc2
// row-parallel, and fc3 (10 classes into the loss) is replicated; in BERT and GPT-2
// every attention block (QKV column, output projection row) and MLP block (first
// column, second row) is split. A model in which nothing splits is a one-line error.
// The partial sums are all-reduced right after their matmul (Megatron adds the Q, K and
// V input gradients before reducing them once; here each is reduced on its own).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "frontend/ir/graph.hpp"

namespace tpusim {

struct TensorParallelSplit {
  std::vector<std::string> column;      // matmul ops split by output columns
  std::vector<std::string> row;         // matmul ops split by input rows (output all-reduced)
  std::vector<std::string> replicated;  // forward weight matmuls kept whole on every chip
};

// tp <= 1: the graph unchanged. The all-reduces are over tp consecutive chips
// (Op::group_stride 1). `split`, when given, receives the choice.
ir::Graph splitTensorParallel(const ir::Graph& graph, int64_t tp, TensorParallelSplit* split = nullptr);

}  // namespace tpusim
