// Elementwise fusion: chains of elementwise ops run tile by tile in VMEM behind the
// op that feeds them, a matmul or convolution (as its epilogue) or another
// elementwise op, instead of each making its own round trip through HBM.
//
// An elementwise op (casts and comparisons among them, as XLA's loop fusion takes them)
// joins the group of the op producing one of its inputs, or else the group of an earlier
// elementwise op that reads one of the same inputs (siblings: both read it in one pass),
// when its output has the group's shape, its other inputs exist before the group starts
// (or come from the group), and nothing in between updates them in place; a recomputation
// (rematerialization's "<op>.remat") joins only a recomputation's group. The pass moves
// each group's ops next to each other (a valid order: see above) and marks them with
// Op::fusion_group. A fused tensor that only its group reads never goes to HBM.
#pragma once

#include <vector>

#include "frontend/ir/graph.hpp"

namespace tpusim {

// The most ops in one group (the VPU program of a tile stays short).
inline constexpr size_t kMaxFusedOps = 16;

bool isFusibleElementwise(ir::OpType type);
bool isMxuOp(ir::OpType type);

ir::Graph fuseElementwise(const ir::Graph& graph);

// Per tensor: the input of the float cast that makes it, where every reader of the cast's
// output loads it tile by tile (the MXU's and the vector unit's ops): XLA fuses such a
// convert into each consumer, which reads the cast's input and converts each tile as it
// lands; else -1. The fusion pass leaves these casts out of elementwise groups.
std::vector<int> operandCastSources(const ir::Graph& graph);

// Per tensor: the operand that the elementwise op making it streams, where the op is in no
// fusion group (it could not join its producer's), every reader is an MXU op, the op streams
// exactly one operand of its shape (not itself a fused cast) and the others are small (a
// per-channel term): XLA fuses such an op into the convolution's or matmul's operand, and
// each reader loads the streamed operand and computes the op per tile (a batch norm
// gradient's last add, read by both convolution gradients); else -1. Lowering applies it to
// the fused graph.
std::vector<int> operandPrologues(const ir::Graph& graph);

// Per tensor: whether the elementwise op that makes it runs inside the reduction that
// reads it (XLA's reduction input fusion): the tensor's only reader is a Reduce or
// ReduceSumTo of it, or is such an op itself (a chain: layer norm's squares of x - mean), and
// the op's inputs move with the reduction's rows (the tensor's shape, one value per row, or a
// scalar). The reduction loads the chain's inputs and computes it tile by tile; the tensor
// never exists. The fusion pass leaves these ops out of elementwise groups.
std::vector<bool> reductionPrologues(const ir::Graph& graph);

// A BroadcastTo whose readers are all broadcasting elementwise ops with another operand of
// its output's shape is removed; they read its input (a broadcast operand of a fused group
// stays in VMEM) instead of a full tensor written to HBM and read back. Autodiff makes these
// (the gradient of a mean). fuseElementwise applies it first.
ir::Graph readBroadcastsInPlace(const ir::Graph& graph);

// XLA's producer duplication: an elementwise op with one streamed operand (the rest small,
// such as a per-row mean) whose readers all compute per tile of its shape, one of them on the
// way into a reduction, is copied ("<op>.recomputed") for each reader but
// the first, just before it. Layer norm's x - mean is then computed inside the variance's
// reduction and again inside the normalizing group instead of going to HBM in f32 and back
// twice; batch norm's is recomputed from the convolution's output by its statistics, its
// normalization and its gradient's reductions. fuseElementwise applies it first.
ir::Graph recomputeReductionProducers(const ir::Graph& graph);

// Per tensor: written and read only inside one fusion group (so it stays in VMEM).
std::vector<bool> onChipOnly(const ir::Graph& graph);

}  // namespace tpusim
