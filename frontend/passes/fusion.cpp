#include "frontend/passes/fusion.hpp"

#include <algorithm>

#include "frontend/passes/placement.hpp"
#include "frontend/train/graph_transforms.hpp"

namespace tpusim {

using ir::OpType;

bool isFusibleElementwise(OpType type) { return ir::isElementwise(type); }

bool isMxuOp(OpType type) {
  return type == OpType::kMatMul || type == OpType::kConv || type == OpType::kConvGradInput ||
         type == OpType::kConvGradWeight;
}

std::vector<int> operandCastSources(const ir::Graph& graph) {
  std::vector<int> source(graph.tensors().size(), -1);
  // Readers that load their operands tile by tile and can convert them as they land: the
  // MXU's ops and the vector unit's (a gather's gradient scatters rows instead). A tensor
  // something updates in place stays a tensor of its own.
  std::vector<bool> converted_by_readers(graph.tensors().size(), true);
  for (const ir::Op& op : graph.ops()) {
    const ir::Unit unit = placementOf(op);
    const bool converts = (unit == ir::Unit::kMxu || unit == ir::Unit::kVpu) && op.type != OpType::kGatherGrad;
    for (int input : op.inputs) {
      if (!converts) converted_by_readers[static_cast<size_t>(input)] = false;
    }
    for (int output : op.outputs) {
      const int updated = graph.tensor(output).alias_of;
      if (updated >= 0 && op.type != OpType::kReshape) converted_by_readers[static_cast<size_t>(updated)] = false;
    }
  }
  for (int output : graph.outputs()) converted_by_readers[static_cast<size_t>(output)] = false;
  for (const ir::Op& op : graph.ops()) {
    if (op.type != OpType::kCast || op.fusion_group >= 0) continue;
    const ir::Tensor& out = graph.tensor(op.outputs[0]);
    const ir::Tensor& in = graph.tensor(op.inputs[0]);
    const bool floats = isFloatingDType(out.dtype) && isFloatingDType(in.dtype) && out.dtype != DType::kF64;
    if (floats && out.alias_of < 0 && converted_by_readers[static_cast<size_t>(out.id)]) {
      source[static_cast<size_t>(out.id)] = in.id;
    }
  }
  return source;
}

std::vector<bool> reductionPrologues(const ir::Graph& graph) {
  std::vector<int> readers(graph.tensors().size(), 0);
  std::vector<const ir::Op*> reader(graph.tensors().size(), nullptr);
  for (const ir::Op& op : graph.ops()) {
    for (int input : op.inputs) {
      ++readers[static_cast<size_t>(input)];
      reader[static_cast<size_t>(input)] = &op;
    }
  }
  for (int output : graph.outputs()) ++readers[static_cast<size_t>(output)];
  std::vector<bool> prologue(graph.tensors().size(), false);
  for (const ir::Op& op : graph.ops()) {
    const ir::Tensor& out = graph.tensor(op.outputs[0]);
    const ir::Op* by = reader[static_cast<size_t>(out.id)];
    if (!isFusibleElementwise(op.type) || op.type == OpType::kCast || out.alias_of >= 0 ||
        readers[static_cast<size_t>(out.id)] != 1 || by == nullptr || by->type != OpType::kReduce || by->perm.empty() ||
        *std::min_element(by->perm.begin(), by->perm.end()) == 0) {
      continue;  // (a reduction over the leading axis accumulates another way)
    }
    const bool same_shapes = std::all_of(op.inputs.begin(), op.inputs.end(),
                                         [&](int input) { return graph.tensor(input).shape == out.shape; });
    if (same_shapes) prologue[static_cast<size_t>(out.id)] = true;
  }
  return prologue;
}

ir::Graph fuseElementwise(const ir::Graph& graph) {
  const std::vector<ir::Op>& ops = graph.ops();
  const std::vector<int> operand_casts = operandCastSources(graph);
  const std::vector<bool> prologues = reductionPrologues(graph);
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
  // Per leader: where its group runs, the position of its latest member (every member's
  // inputs exist by then, and nothing outside the group reads its outputs before).
  std::vector<size_t> anchor(count);
  for (size_t i = 0; i < count; ++i) anchor[i] = i;
  const auto inGroup = [&](size_t j, size_t leader) {
    return j == leader || group[j] == static_cast<int>(leader);
  };
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
  // Whether op i may join the group led by `leader` (which may still be alone).
  const auto mayJoin = [&](size_t leader, size_t i) {
    const ir::Op& op = ops[i];
    const ir::Op& lead = ops[leader];
    if (!isMxuOp(lead.type) && !isFusibleElementwise(lead.type)) return false;
    // A recomputation moved next to a forward leader would run in the forward pass.
    if (isRecomputation(op.name) && !isRecomputation(lead.name)) return false;
    if (graph.tensor(lead.outputs[0]).alias_of >= 0) return false;
    if (graph.tensor(lead.outputs[0]).shape != graph.tensor(op.outputs[0]).shape) return false;
    if (std::max<size_t>(size[leader], 1) >= kMaxFusedOps) return false;
    // The group moves to i's position, so what its members read must not be updated in
    // place before then (op i itself reads there already).
    for (size_t j = leader; j < i; ++j) {
      if (!inGroup(j, leader)) continue;
      for (int input : ops[j].inputs) {
        if (updatedBetween(input, j, i)) return false;
      }
    }
    // The group moves to i's position: no op in between outside it may read its outputs.
    for (size_t j = anchor[leader] + 1; j < i; ++j) {
      if (inGroup(j, leader)) continue;
      for (int input : ops[j].inputs) {
        const int made = producer[static_cast<size_t>(input)];
        if (made >= 0 && inGroup(static_cast<size_t>(made), leader)) return false;
      }
    }
    return true;
  };
  const auto join = [&](size_t leader, size_t i) {
    if (size[leader] == 0) {
      group[leader] = static_cast<int>(leader);
      size[leader] = 1;
    }
    group[i] = static_cast<int>(leader);
    ++size[leader];
    anchor[leader] = i;
  };
  // Per tensor: the group leader of the latest elementwise op that read it.
  std::vector<int> last_reader(graph.tensors().size(), -1);
  for (size_t i = 0; i < count; ++i) {
    const ir::Op& op = ops[i];
    if (!isFusibleElementwise(op.type)) continue;
    const ir::Tensor& out = graph.tensor(op.outputs[0]);
    if (out.alias_of >= 0 || operand_casts[static_cast<size_t>(out.id)] >= 0 || prologues[static_cast<size_t>(out.id)]) {
      continue;
    }
    // Behind the producer of an input (as its epilogue or the next op of its chain).
    for (int input : op.inputs) {
      const int from = producer[static_cast<size_t>(input)];
      if (from < 0 || graph.tensor(input).shape != out.shape || operand_casts[static_cast<size_t>(input)] >= 0 ||
          prologues[static_cast<size_t>(input)]) {
        continue;
      }
      const ir::Op& source = ops[static_cast<size_t>(from)];
      if (group[static_cast<size_t>(from)] < 0 && !isMxuOp(source.type) && !isFusibleElementwise(source.type)) continue;
      const size_t leader = group[static_cast<size_t>(from)] >= 0
                                ? static_cast<size_t>(group[static_cast<size_t>(from)])
                                : static_cast<size_t>(from);
      if (mayJoin(leader, i)) {
        join(leader, i);
        break;
      }
    }
    // Else beside an op that reads the same tensor (a sibling: both read it in one pass).
    for (size_t k = 0; group[i] < 0 && k < op.inputs.size(); ++k) {
      const int input = op.inputs[k];
      const int leader = last_reader[static_cast<size_t>(input)];
      if (leader >= 0 && graph.tensor(input).shape == out.shape && mayJoin(static_cast<size_t>(leader), i)) {
        join(static_cast<size_t>(leader), i);
      }
    }
    const int leader = group[i] >= 0 ? group[i] : static_cast<int>(i);
    for (int input : op.inputs) last_reader[static_cast<size_t>(input)] = leader;
  }
  // Each group's ops run together at its anchor, the leader first.
  std::vector<size_t> order;
  std::vector<std::vector<size_t>> members(count);
  std::vector<int> anchored(count, -1);  // per position: the leader of the group that runs there
  for (size_t i = 0; i < count; ++i) {
    if (group[i] >= 0 && static_cast<size_t>(group[i]) != i) members[static_cast<size_t>(group[i])].push_back(i);
    if (group[i] == static_cast<int>(i)) anchored[anchor[i]] = static_cast<int>(i);
  }
  for (size_t i = 0; i < count; ++i) {
    if (group[i] < 0) order.push_back(i);
    if (anchored[i] < 0) continue;
    const auto leader = static_cast<size_t>(anchored[i]);
    order.push_back(leader);
    order.insert(order.end(), members[leader].begin(), members[leader].end());
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
