#include "frontend/passes/memory_plan.hpp"

#include <algorithm>
#include <numeric>
#include <set>
#include <tuple>

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
  std::vector<uint64_t> sizes(count, 0);  // aligned bytes of each planned storage
  for (int id : roots) sizes[static_cast<size_t>(id)] = aligned(tensors[static_cast<size_t>(id)].bytes());
  const auto overlapInTime = [&](size_t a, size_t b) { return first[a] <= last[b] && first[b] <= last[a]; };

  // Greedy by size: the largest tensors take the low offsets; each later one goes into the
  // lowest gap left by the tensors placed so far that are live at the same time. The placed
  // ones are kept in order of their [offset, end), so the first gap is found walking up from
  // 0, past those live at another time, and the walk stops at the first gap that fits.
  std::vector<int> order = roots;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return sizes[static_cast<size_t>(a)] > sizes[static_cast<size_t>(b)]; });
  std::set<std::tuple<uint64_t, uint64_t, int>> placed;  // [offset, end), id
  for (int id : order) {
    const size_t i = static_cast<size_t>(id);
    uint64_t candidate = 0;
    for (const auto& [begin, stop, other] : placed) {
      if (!overlapInTime(i, static_cast<size_t>(other))) continue;
      if (candidate + sizes[i] <= begin) break;
      candidate = std::max(candidate, stop);
    }
    plan.offset[i] = candidate;
    plan.peak_bytes = std::max(plan.peak_bytes, candidate + sizes[i]);
    placed.emplace(candidate, candidate + sizes[i], id);
  }

  // A storage reuses memory when it overlaps, in space, one that died before it was written.
  // Walking the storages by when they are written, those that died before enter a prefix-max
  // tree over their offsets (the highest end among those that begin below a point): one
  // overlaps [offset, offset + size) if one that begins below its end ends above its offset.
  std::vector<uint64_t> begins;
  for (int id : roots) begins.push_back(plan.offset[static_cast<size_t>(id)]);
  std::sort(begins.begin(), begins.end());
  begins.erase(std::unique(begins.begin(), begins.end()), begins.end());
  std::vector<uint64_t> highest_end(begins.size() + 1, 0);  // Fenwick tree, 1-based
  const auto insert = [&](uint64_t begin, uint64_t stop) {
    for (size_t k = static_cast<size_t>(std::lower_bound(begins.begin(), begins.end(), begin) - begins.begin()) + 1;
         k < highest_end.size(); k += k & (~k + 1)) {
      highest_end[k] = std::max(highest_end[k], stop);
    }
  };
  const auto highestEndBelow = [&](uint64_t point) {  // over the intervals that begin below `point`
    uint64_t highest = 0;
    for (size_t k = static_cast<size_t>(std::lower_bound(begins.begin(), begins.end(), point) - begins.begin()); k > 0;
         k -= k & (~k + 1)) {
      highest = std::max(highest, highest_end[k]);
    }
    return highest;
  };
  std::vector<int> by_first = roots, by_last = roots;
  std::stable_sort(by_first.begin(), by_first.end(),
                   [&](int a, int b) { return first[static_cast<size_t>(a)] < first[static_cast<size_t>(b)]; });
  std::stable_sort(by_last.begin(), by_last.end(),
                   [&](int a, int b) { return last[static_cast<size_t>(a)] < last[static_cast<size_t>(b)]; });
  size_t dead = 0;
  for (int id : by_first) {
    const size_t i = static_cast<size_t>(id);
    for (; dead < by_last.size() && last[static_cast<size_t>(by_last[dead])] < first[i]; ++dead) {
      const size_t j = static_cast<size_t>(by_last[dead]);
      if (sizes[j] != 0) insert(plan.offset[j], plan.offset[j] + sizes[j]);
    }
    if (sizes[i] != 0 && highestEndBelow(plan.offset[i] + sizes[i]) > plan.offset[i]) plan.reuses[i] = true;
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
