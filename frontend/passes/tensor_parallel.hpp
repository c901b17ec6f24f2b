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
//   vocabulary-parallel  an embedding table (a gathered weight) split by rows: each
//                    chip looks up the ids in its rows and the outputs are all-reduced; a
//                    matmul into the softmax cross-entropy (an LM head) split by columns
//                    (classes), its loss all-reduced (Megatron-LM's parallel embedding and
//                    cross-entropy; Shoeybi et al. 2019, section 3, last paragraphs).
// Backward, the same propagation splits the gradients: the weight gradients come out
// split like their weights, and the input gradient of a column-parallel matmul is a
// partial sum, all-reduced over the group. Every chip of a group keeps the rest whole
// (layer norms, position embeddings that do not divide, unpaired matmuls), computing it
// redundantly.
//
// Which matmuls: the forward matmuls with a weight operand, taken in op order, grouped
// by the activation they read (a transformer's Q, K and V read one input and are tried
// together). A group is made column-parallel when the splits it starts propagate through
// the whole training graph (frontend/passes/split_propagation.hpp) to the matmuls that
// contract over them, which become row-parallel; otherwise, and when a dimension does
// not divide by tp, it stays whole (replicated). Then each embedding table is tried on
// its own, split by rows. So on the MLP fc1 is column- and fc2 row-parallel, and fc3
// (10 classes into the loss) is column-parallel into a split loss where tp divides 10; in
// BERT and GPT-2 every attention block (QKV column, output projection row) and MLP block
// (first column, second row) is split, and the embedding tables whose rows divide by tp.
// A model in which nothing splits is a one-line error.
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
  std::vector<std::string> vocabulary;  // gathers from an embedding table split by rows (output all-reduced)
};

// tp <= 1: the graph unchanged. The all-reduces are over tp consecutive chips
// (Op::group_stride 1). `split`, when given, receives the choice.
ir::Graph splitTensorParallel(const ir::Graph& graph, int64_t tp, TensorParallelSplit* split = nullptr);

}  // namespace tpusim
