#include "frontend/passes/data_parallel.hpp"

#include <algorithm>
#include <vector>

#include "frontend/passes/all_reduce_insertion.hpp"

namespace tpusim {

namespace {

using ir::OpType;

// The gradient operand of an optimizer op, or -1.
int gradientOperand(const ir::Graph& graph, const ir::Op& op) {
  if (op.type == OpType::kSgdUpdate) return op.inputs[1];
  if (op.type != OpType::kOptimizerUpdate) return -1;
  if (op.update_target == ir::UpdateTarget::kParameter) return op.inputs[1];
  if (op.update_target == ir::UpdateTarget::kStep) return -1;
  const int gradient = op.inputs[0];  // a state update reads [gradient, step, ...]
  return graph.tensor(gradient).role == ir::TensorRole::kGradient ? gradient : -1;
}

}  // namespace

ir::Graph allReduceGradients(const ir::Graph& graph, int64_t replicas, int64_t stride) {
  if (replicas <= 1) return graph;
  // The gradients to reduce, in the order their producers run (deterministic).
  std::vector<int> gradients;
  for (const ir::Op& op : graph.ops()) {
    const int gradient = gradientOperand(graph, op);
    if (gradient < 0 || graph.producer(gradient) == nullptr) continue;
    if (std::find(gradients.begin(), gradients.end(), gradient) == gradients.end()) gradients.push_back(gradient);
  }
  return allReduceAfterProducers(graph, gradients, replicas, stride, ".all_reduce", ir::TensorRole::kGradient,
                                 ir::Phase::kCollective);
}

}  // namespace tpusim
