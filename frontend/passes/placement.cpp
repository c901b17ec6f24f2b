#include "frontend/passes/placement.hpp"

#include "frontend/passes/fusion.hpp"

namespace tpusim {

ir::Unit placementOf(ir::OpType type) {
  if (isMxuOp(type)) return ir::Unit::kMxu;
  if (type == ir::OpType::kGather) return ir::Unit::kDma;
  if (type == ir::OpType::kReshape) return ir::Unit::kView;
  return ir::Unit::kVpu;
}

ir::Unit placementOf(const ir::Op& op) {
  if (op.type == ir::OpType::kAllReduce && op.replicas > 1) return ir::Unit::kIci;
  return placementOf(op.type);
}

ir::Graph placeOps(const ir::Graph& graph) {
  ir::Graph result = graph;
  for (size_t i = 0; i < result.ops().size(); ++i) result.annotate(i).placement = placementOf(result.ops()[i]);
  return result;
}

}  // namespace tpusim
