// Which axis of each tensor is split over the chips of a tensor-parallel group
// (frontend/passes/tensor_parallel.hpp), propagated from the split weights through
// the graph in op order, forward, backward and optimizer alike.
//
// A tensor is whole (every chip holds all of it) or split along one axis (each chip
// holds 1/parts of it). Weights, optimizer states and constants not seeded are
// undecided until their first reader decides: split where they meet a split operand
// along a dimension they carry (a bias added to a column-split output), whole
// otherwise. The rules, per op:
//   - elementwise ops (broadcasting), Softmax over an axis that is not split, Cast,
//     optimizer updates: the output is split where the split operands are; every
//     operand carrying that dimension must be split along it.
//   - MatMul: split M rows or N columns give split rows or columns; a batch axis split
//     on both operands (attention heads) stays split; a contraction split on both
//     operands leaves each chip a partial sum (SplitPlan::partial_ops), all-reduced
//     after the op, so the output is whole. A contraction split on one operand only,
//     or rows and columns split at once, is refused.
//   - Reshape follows the split axis when it stays the major part of a dimension
//     (768 -> 12 x 64 splits the 12 heads; 12 x 64 -> 768 back); Transpose permutes it;
//     Reduce and ReduceSumTo may not sum over it; Slice and SliceGrad along it take
//     1/parts from start/parts (each chip's share of every slice: a fused QKV weight
//     laid out chip by chip).
//   - Gather from a table split along the gathered axis (a vocabulary-parallel
//     embedding) is a partial sum, all-reduced after it; GatherGrad of whole operands
//     leaves its output to the first reader that decides it (split like the table it
//     differentiates). An elementwise op whose output-shaped operands are all undecided
//     (a parameter's cast; an optimizer state's update from that gradient) ties them and
//     its output, decided together by their next reader (the table's own update); a Sum
//     of all of such a tensor (mixed_float16's finite check) waits too, a partial sum if
//     it ends split.
//   - SoftmaxCrossEntropy of logits split along the classes (a vocabulary-parallel LM
//     head) is a partial loss, all-reduced after it; its gradient is split like them.
//   - Any other op (convolution, pooling, other losses) takes whole operands only.
// A graph output may be split: each chip holds its share (the logits of a split head;
// their gather to the host is not modelled). A split dimension must divide by `parts`.
// Propagation stops at the first op that breaks a rule: the failure names it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "frontend/ir/graph.hpp"

namespace tpusim {

inline constexpr int kWholeTensor = -1;

struct SplitPlan {
  std::vector<int> axis;            // per tensor: its split axis, or kWholeTensor
  std::vector<size_t> partial_ops;  // MatMuls whose outputs are partial sums, in op order
};

struct SplitFailure {
  std::string op;  // empty when a seed itself does not divide
  std::string reason;
};

// `seeds`: weight tensor -> its split axis. nullopt (and `failure` filled) when an op
// cannot take its operands' splits.
std::optional<SplitPlan> propagateSplits(const ir::Graph& graph, int64_t parts, const std::map<int, int>& seeds,
                                         SplitFailure* failure);

}  // namespace tpusim
