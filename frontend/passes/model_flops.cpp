#include "frontend/passes/model_flops.hpp"

#include "frontend/train/graph_transforms.hpp"

namespace tpusim {

namespace {

uint64_t elements(const ir::Graph& graph, int tensor) {
  return static_cast<uint64_t>(ir::elementCount(graph.tensor(tensor).shape));
}

}  // namespace

uint64_t modelFlopsOf(const ir::Graph& graph, const ir::Op& op) {
  switch (op.type) {
    case ir::OpType::kMatMul: {
      // Each output element is a dot product over a's contracted dimension.
      const ir::Shape& a = graph.tensor(op.inputs[0]).shape;
      const int64_t k = op.transpose_a ? a[a.size() - 2] : a.back();
      return 2 * elements(graph, op.outputs[0]) * static_cast<uint64_t>(k);
    }
    case ir::OpType::kConv:  // out [N, M, OH, OW] from w [M, C/group, KH, KW]: C/group x KH x KW per output
      return 2 * elements(graph, op.outputs[0]) * (elements(graph, op.inputs[1]) /
                                                   static_cast<uint64_t>(graph.tensor(op.inputs[1]).shape[0]));
    case ir::OpType::kConvGradInput:  // (dy, w): the forward's multiply-adds, once more
      return 2 * elements(graph, op.inputs[0]) * (elements(graph, op.inputs[1]) /
                                                  static_cast<uint64_t>(graph.tensor(op.inputs[1]).shape[0]));
    case ir::OpType::kConvGradWeight:  // (x, dy) -> dw [M, C/group, KH, KW]
      return 2 * elements(graph, op.inputs[1]) * (elements(graph, op.outputs[0]) /
                                                  static_cast<uint64_t>(graph.tensor(op.outputs[0]).shape[0]));
    default: return 0;
  }
}

uint64_t modelFlops(const ir::Graph& graph) {
  uint64_t flops = 0;
  for (const ir::Op& op : graph.ops()) {
    if (!isRecomputation(op.name)) flops += modelFlopsOf(graph, op);
  }
  return flops;
}

}  // namespace tpusim
