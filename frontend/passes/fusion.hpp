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

// Per tensor: whether the elementwise op that makes it runs inside the reduction that
// reads it (XLA's reduction input fusion): the tensor's only reader reduces trailing axes of
// it, and the op's inputs are the tensor's shape. The reduction loads the op's inputs and
// computes it tile by tile; the tensor never exists. The fusion pass leaves these ops out of
// elementwise groups.
std::vector<bool> reductionPrologues(const ir::Graph& graph);

// Per tensor: written and read only inside one fusion group (so it stays in VMEM).
std::vector<bool> onChipOnly(const ir::Graph& graph);

}  // namespace tpusim
