#include "frontend/passes/data_parallel.hpp"

#include <algorithm>
#include <map>
#include <vector>

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

ir::Graph allReduceGradients(const ir::Graph& graph, int64_t replicas) {
  if (replicas <= 1) return graph;
  // The gradients to reduce, in the order their producers run (deterministic).
  std::vector<int> gradients;
  for (const ir::Op& op : graph.ops()) {
    const int gradient = gradientOperand(graph, op);
    if (gradient < 0 || graph.producer(gradient) == nullptr) continue;
    if (std::find(gradients.begin(), gradients.end(), gradient) == gradients.end()) gradients.push_back(gradient);
  }
  if (gradients.empty()) return graph;
  const std::vector<ir::Op>& ops = graph.ops();
  std::map<const ir::Op*, size_t> index;
  for (size_t i = 0; i < ops.size(); ++i) index[&ops[i]] = i;
  std::sort(gradients.begin(), gradients.end(),
            [&](int a, int b) { return index[graph.producer(a)] < index[graph.producer(b)]; });

  ir::Graph appended = graph;
  std::map<int, int> reduced;  // gradient -> its all-reduced tensor
  for (int gradient : gradients) {
    const ir::Tensor& t = graph.tensor(gradient);
    reduced[gradient] =
        appended.allReduce(t.name + ".all_reduce", gradient, ir::Reduction::kSum, replicas, ir::TensorRole::kGradient);
  }
  // Each all-reduce right after its gradient's producer.
  std::vector<size_t> order;
  size_t next = ops.size();
  for (size_t i = 0; i < ops.size(); ++i) {
    order.push_back(i);
    while (next < ops.size() + gradients.size() && graph.producer(gradients[next - ops.size()]) == &ops[i]) {
      order.push_back(next++);
    }
  }
  const ir::Graph placed = appended.reordered(order);
  // Every other reader of a gradient reads the reduced one.
  ir::Graph::Rewrite rewrite(placed);
  for (size_t i = 0; i < placed.ops().size(); ++i) {
    const ir::Op& op = placed.ops()[i];
    const bool is_ours =
        op.type == OpType::kAllReduce && reduced.count(op.inputs[0]) > 0 && reduced[op.inputs[0]] == op.outputs[0];
    if (is_ours) continue;
    ir::Op replacement = op;
    bool changed = false;
    for (int& input : replacement.inputs) {
      const auto found = reduced.find(input);
      if (found == reduced.end()) continue;
      input = found->second;
      changed = true;
    }
    if (changed) rewrite.replace[i] = std::move(replacement);
  }
  return placed.rewired(rewrite);
}

}  // namespace tpusim
