#include "frontend/passes/fusion.hpp"

#include <algorithm>

#include "frontend/train/graph_transforms.hpp"

namespace tpusim {

using ir::OpType;

bool isFusibleElementwise(OpType type) {
  // Casts, comparisons and maximum/minimum stay ops of their own: the set the
  // pass was built and validated with (widening it changes every Program).
  switch (type) {
    case OpType::kCast:
    case OpType::kCompare:
    case OpType::kMaximum:
    case OpType::kMinimum: return false;
    default: return ir::isElementwise(type);
  }
}

bool isMxuOp(OpType type) {
  return type == OpType::kMatMul || type == OpType::kConv || type == OpType::kConvGradInput ||
         type == OpType::kConvGradWeight;
}

ir::Graph fuseElementwise(const ir::Graph& graph) {
  const std::vector<ir::Op>& ops = graph.ops();
  const size_t count = ops.size();
  std::vector<int> producer(graph.tensors().size(), -1);
  for (size_t i = 0; i < count; ++i) {
    for (int output : ops[i].outputs) producer[static_cast<size_t>(output)] = static_cast<int>(i);
  }
  const auto root = [&](int tensor) {
    while (graph.tensor(tensor).alias_of >= 0) tensor = graph.tensor(tensor).alias_of;
    return tensor;
  };
  std::vector<int> group(count, -1);   // leader of each op's group
  std::vector<size_t> size(count, 0);  // per leader: ops in the group
  std::vector<int> updated_at;         // per tensor storage: op indices that write it in place
  std::vector<std::vector<size_t>> in_place(graph.tensors().size());
  for (size_t i = 0; i < count; ++i) {
    for (int output : ops[i].outputs) {
      if (graph.tensor(output).alias_of >= 0 && ops[i].type != OpType::kReshape) {
        in_place[static_cast<size_t>(root(output))].push_back(i);
      }
    }
  }
  const auto updatedBetween = [&](int tensor, size_t after, size_t before) {
    for (size_t at : in_place[static_cast<size_t>(root(tensor))]) {
      if (at > after && at < before) return true;
    }
    return false;
  };
  for (size_t i = 0; i < count; ++i) {
    const ir::Op& op = ops[i];
    if (!isFusibleElementwise(op.type)) continue;
    const ir::Tensor& out = graph.tensor(op.outputs[0]);
    if (out.alias_of >= 0) continue;
    for (int input : op.inputs) {
      const int from = producer[static_cast<size_t>(input)];
      if (from < 0) continue;
      const ir::Op& source = ops[static_cast<size_t>(from)];
      const size_t leader = group[static_cast<size_t>(from)] >= 0
                                ? static_cast<size_t>(group[static_cast<size_t>(from)])
                                : static_cast<size_t>(from);
      const ir::Op& lead = ops[leader];
      if (!isMxuOp(lead.type) && !isFusibleElementwise(lead.type)) continue;
      // A recomputation moved next to a forward leader would run in the forward pass.
      if (isRecomputation(op.name) && !isRecomputation(lead.name)) continue;
      if (graph.tensor(lead.outputs[0]).alias_of >= 0) continue;
      if (graph.tensor(lead.outputs[0]).shape != out.shape || graph.tensor(input).shape != out.shape) continue;
      if (group[static_cast<size_t>(from)] < 0 && !isMxuOp(source.type) && !isFusibleElementwise(source.type)) continue;
      if (std::max<size_t>(size[leader], 1) >= kMaxFusedOps) continue;
      bool fits = true;
      for (int other : op.inputs) {
        const int made = producer[static_cast<size_t>(other)];
        const bool inside = made >= 0 && (static_cast<size_t>(made) == leader ||
                                          group[static_cast<size_t>(made)] == static_cast<int>(leader));
        if (!inside && made >= 0 && static_cast<size_t>(made) > leader) fits = false;
        if (!inside && updatedBetween(other, leader, i)) fits = false;
      }
      if (!fits) continue;
      if (size[leader] == 0) {
        group[leader] = static_cast<int>(leader);
        size[leader] = 1;
      }
      group[i] = static_cast<int>(leader);
      ++size[leader];
      break;
    }
  }
  // Each group's ops follow its leader.
  std::vector<size_t> order;
  std::vector<std::vector<size_t>> members(count);
  for (size_t i = 0; i < count; ++i) {
    if (group[i] >= 0 && static_cast<size_t>(group[i]) != i) members[static_cast<size_t>(group[i])].push_back(i);
  }
  for (size_t i = 0; i < count; ++i) {
    if (group[i] >= 0 && static_cast<size_t>(group[i]) != i) continue;
    order.push_back(i);
    order.insert(order.end(), members[i].begin(), members[i].end());
  }
  ir::Graph result = graph.reordered(order);
  std::vector<size_t> position(count);
  for (size_t at = 0; at < order.size(); ++at) position[order[at]] = at;
  for (size_t at = 0; at < order.size(); ++at) {
    const int leader = group[order[at]];
    result.annotate(at).fusion_group = leader >= 0 ? static_cast<int>(position[static_cast<size_t>(leader)]) : -1;
  }
  return result;
}

std::vector<bool> onChipOnly(const ir::Graph& graph) {
  const std::vector<ir::Op>& ops = graph.ops();
  std::vector<int> group_of(graph.tensors().size(), -2);  // -2: not written by a fused op
  for (const ir::Op& op : ops) {
    if (op.fusion_group < 0) continue;
    for (int output : op.outputs) group_of[static_cast<size_t>(output)] = op.fusion_group;
  }
  std::vector<bool> on_chip(graph.tensors().size(), false);
  for (const ir::Tensor& tensor : graph.tensors()) {
    const size_t id = static_cast<size_t>(tensor.id);
    on_chip[id] = group_of[id] >= 0 && tensor.role != ir::TensorRole::kLoss;
  }
  for (int output : graph.outputs()) on_chip[static_cast<size_t>(output)] = false;
  for (const ir::Op& op : ops) {
    for (int input : op.inputs) {
      const size_t id = static_cast<size_t>(input);
      if (on_chip[id] && op.fusion_group != group_of[id]) on_chip[id] = false;
      // A view of the tensor is read elsewhere.
      if (op.type == ir::OpType::kReshape) on_chip[id] = false;
    }
  }
  return on_chip;
}

}  // namespace tpusim
