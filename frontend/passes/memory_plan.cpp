#include "frontend/passes/memory_plan.hpp"

#include <algorithm>
#include <numeric>

#include "frontend/passes/fusion.hpp"

namespace tpusim {

namespace {

constexpr uint64_t kAlignment = 64;  // bytes: one DMA burst

uint64_t aligned(uint64_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

bool persistent(const ir::Tensor& tensor) {
  return tensor.role == ir::TensorRole::kInput || tensor.role == ir::TensorRole::kLabel ||
         tensor.role == ir::TensorRole::kWeight || tensor.role == ir::TensorRole::kConstant ||
         tensor.role == ir::TensorRole::kOptimizerState;
}

}  // namespace

MemoryPlan planMemory(const ir::Graph& graph) {
  const std::vector<ir::Tensor>& tensors = graph.tensors();
  const std::vector<ir::Op>& ops = graph.ops();
  const int end = static_cast<int>(ops.size());
  const size_t count = tensors.size();
  MemoryPlan plan;
  plan.offset.assign(count, 0);
  plan.storage.resize(count);
  plan.first_op.assign(count, -1);
  plan.last_op.assign(count, -1);
  plan.reuses.assign(count, false);

  for (const ir::Tensor& tensor : tensors) {
    int root = tensor.id;
    while (tensors[static_cast<size_t>(root)].alias_of >= 0) root = tensors[static_cast<size_t>(root)].alias_of;
    plan.storage[static_cast<size_t>(tensor.id)] = root;
  }
  // Intervals of the storages: written by the first op that writes any of its tensors,
  // read until the last op that reads (or, for an aliasing update, writes) any of them.
  std::vector<int> first(count, end), last(count, -1);
  for (const ir::Tensor& tensor : tensors) {
    const size_t root = static_cast<size_t>(plan.storage[static_cast<size_t>(tensor.id)]);
    if (persistent(tensor)) first[root] = -1;
  }
  for (int index = 0; index < end; ++index) {
    const ir::Op& op = ops[static_cast<size_t>(index)];
    for (int input : op.inputs) {
      const size_t root = static_cast<size_t>(plan.storage[static_cast<size_t>(input)]);
      last[root] = std::max(last[root], index);
    }
    for (int output : op.outputs) {
      const size_t root = static_cast<size_t>(plan.storage[static_cast<size_t>(output)]);
      first[root] = std::min(first[root], index);
      last[root] = std::max(last[root], index);
    }
  }
  for (const ir::Tensor& tensor : tensors) {
    const size_t root = static_cast<size_t>(plan.storage[static_cast<size_t>(tensor.id)]);
    if (persistent(tensor) || tensor.role == ir::TensorRole::kLoss) last[root] = end;
  }
  // A collective across replicas runs asynchronously and its reduction's adds are emitted
  // just before its result's first reader (frontend/lower/lower_collective.cpp): its input
  // stays live as long as its output.
  for (const ir::Op& op : ops) {
    if (op.type != ir::OpType::kAllReduce || op.replicas <= 1) continue;
    const size_t in = static_cast<size_t>(plan.storage[static_cast<size_t>(op.inputs[0])]);
    const size_t out = static_cast<size_t>(plan.storage[static_cast<size_t>(op.outputs[0])]);
    last[in] = std::max(last[in], last[out]);
  }
  for (int output : graph.outputs()) last[static_cast<size_t>(plan.storage[static_cast<size_t>(output)])] = end;

  // Tensors that stay in VMEM inside a fusion group, and ones nothing writes or reads,
  // take no HBM.
  const std::vector<bool> on_chip = onChipOnly(graph);
  std::vector<int> roots;
  for (const ir::Tensor& tensor : tensors) {
    if (plan.storage[static_cast<size_t>(tensor.id)] != tensor.id) continue;
    const size_t id = static_cast<size_t>(tensor.id);
    if (on_chip[id] || (first[id] == end && last[id] < 0 && !persistent(tensor))) {
      plan.unplanned_bytes += tensor.bytes();
      continue;
    }
    if (first[id] == end) first[id] = -1;  // neither written nor persistent: an unused input of a builder
    if (last[id] < first[id]) last[id] = first[id];
    roots.push_back(tensor.id);
    plan.unplanned_bytes += tensor.bytes();
    if (first[id] == -1 && last[id] == end) plan.persistent_bytes += tensor.bytes();
  }
  const auto overlapInTime = [&](int a, int b) {
    return first[static_cast<size_t>(a)] <= last[static_cast<size_t>(b)] &&
           first[static_cast<size_t>(b)] <= last[static_cast<size_t>(a)];
  };
  const auto size = [&](int id) { return aligned(tensors[static_cast<size_t>(id)].bytes()); };

  // Greedy by size: the largest tensors take the low offsets; each later one goes into
  // the lowest gap left by the tensors placed so far that are live at the same time.
  std::vector<int> order = roots;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return size(a) > size(b); });
  std::vector<int> placed;
  for (int id : order) {
    std::vector<std::pair<uint64_t, uint64_t>> busy;  // [begin, end) of simultaneous tensors
    for (int other : placed) {
      if (overlapInTime(id, other)) {
        busy.emplace_back(plan.offset[static_cast<size_t>(other)],
                          plan.offset[static_cast<size_t>(other)] + size(other));
      }
    }
    std::sort(busy.begin(), busy.end());
    uint64_t candidate = 0;
    for (const auto& [begin, stop] : busy) {
      if (candidate + size(id) <= begin) break;
      candidate = std::max(candidate, stop);
    }
    plan.offset[static_cast<size_t>(id)] = candidate;
    plan.peak_bytes = std::max(plan.peak_bytes, candidate + size(id));
    placed.push_back(id);
  }

  // A storage reuses memory when it overlaps, in space, one that died before it was written.
  for (int id : roots) {
    const size_t i = static_cast<size_t>(id);
    for (int other : roots) {
      const size_t j = static_cast<size_t>(other);
      if (last[j] >= first[i] || size(id) == 0 || size(other) == 0) continue;
      if (plan.offset[j] < plan.offset[i] + size(id) && plan.offset[i] < plan.offset[j] + size(other)) {
        plan.reuses[i] = true;
        break;
      }
    }
  }

  // Bytes live at each op: +size where a storage starts, -size after it ends (position 0 is "before op 0").
  std::vector<int64_t> delta(static_cast<size_t>(end) + 2, 0);
  for (int id : roots) {
    const int64_t bytes = static_cast<int64_t>(tensors[static_cast<size_t>(id)].bytes());
    delta[static_cast<size_t>(first[static_cast<size_t>(id)] + 1)] += bytes;
    delta[static_cast<size_t>(last[static_cast<size_t>(id)] + 1) + (last[static_cast<size_t>(id)] < end ? 1 : 0)] -=
        bytes;
  }
  int64_t live = 0;
  for (int position = 0; position <= end; ++position) {
    live += delta[static_cast<size_t>(position)];
    if (static_cast<uint64_t>(live) > plan.live_peak_bytes) {
      plan.live_peak_bytes = static_cast<uint64_t>(live);
      plan.live_peak_op = std::min(position - 1, end - 1);
    }
  }

  for (const ir::Tensor& tensor : tensors) {
    const size_t id = static_cast<size_t>(tensor.id);
    const size_t root = static_cast<size_t>(plan.storage[id]);
    plan.offset[id] = plan.offset[root];
    plan.first_op[id] = first[root];
    plan.last_op[id] = last[root];
    plan.reuses[id] = plan.reuses[root];
  }
  return plan;
}

std::string describePlan(const ir::Graph& graph, const MemoryPlan& plan) {
  std::string text = "peak " + std::to_string(plan.peak_bytes) + " B, live peak " +
                     std::to_string(plan.live_peak_bytes) + " B, persistent " + std::to_string(plan.persistent_bytes) +
                     " B, without reuse " + std::to_string(plan.unplanned_bytes) + " B\n";
  const std::vector<bool> on_chip = onChipOnly(graph);
  for (const ir::Tensor& tensor : graph.tensors()) {
    const size_t id = static_cast<size_t>(tensor.id);
    if (plan.storage[id] != tensor.id) continue;
    text.append("%").append(std::to_string(tensor.id)).append(" ").append(tensor.name);
    if (on_chip[id]) {
      text.append(": in VMEM only\n");
      continue;
    }
    text.append(": +").append(std::to_string(plan.offset[id])).append(" ").append(std::to_string(tensor.bytes()));
    text.append(" B, ops ")
        .append(std::to_string(plan.first_op[id]))
        .append("..")
        .append(std::to_string(plan.last_op[id]));
    text.append(plan.reuses[id] ? " (reuses)\n" : "\n");
  }
  return text;
}

}  // namespace tpusim
