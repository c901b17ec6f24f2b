#include "frontend/passes/all_reduce_insertion.hpp"

#include <algorithm>
#include <map>

namespace tpusim {

ir::Graph allReduceAfterProducers(const ir::Graph& graph, std::vector<int> tensors, int64_t replicas, int64_t stride,
                                  const std::string& suffix, std::optional<ir::TensorRole> role,
                                  std::optional<ir::Phase> phase) {
  if (tensors.empty()) return graph;
  const std::vector<ir::Op>& ops = graph.ops();
  std::map<const ir::Op*, size_t> index;
  for (size_t i = 0; i < ops.size(); ++i) index[&ops[i]] = i;
  // In the order their producers run (deterministic).
  std::stable_sort(tensors.begin(), tensors.end(),
                   [&](int a, int b) { return index[graph.producer(a)] < index[graph.producer(b)]; });

  ir::Graph appended = graph;
  std::map<int, int> reduced;  // tensor -> its all-reduced tensor
  for (int tensor : tensors) {
    const ir::Tensor& t = graph.tensor(tensor);
    reduced[tensor] = appended.allReduce(t.name + suffix, tensor, ir::Reduction::kSum, replicas, role.value_or(t.role));
    ir::Op& all_reduce = appended.annotate(appended.ops().size() - 1);
    all_reduce.group_stride = stride;
    all_reduce.phase = phase.value_or(graph.producer(tensor)->phase);
  }
  // Each all-reduce right after its tensor's producer.
  std::vector<size_t> order;
  size_t next = ops.size();
  for (size_t i = 0; i < ops.size(); ++i) {
    order.push_back(i);
    while (next < ops.size() + tensors.size() && graph.producer(tensors[next - ops.size()]) == &ops[i]) {
      order.push_back(next++);
    }
  }
  const ir::Graph placed = appended.reordered(order);
  // Every other reader of a tensor reads the reduced one.
  ir::Graph::Rewrite rewrite(placed);
  for (size_t i = 0; i < placed.ops().size(); ++i) {
    const ir::Op& op = placed.ops()[i];
    const bool is_ours =
        op.type == ir::OpType::kAllReduce && reduced.count(op.inputs[0]) > 0 && reduced[op.inputs[0]] == op.outputs[0];
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
