#include "reference/tensor_lifetimes.hpp"

#include <algorithm>
#include <string>

#include "sim/common/error.hpp"

namespace tpusim::reference {

std::vector<bool> keptTensors(const ir::Graph& graph, const std::vector<int>& keep) {
  const size_t tensors = graph.tensors().size();
  std::vector<bool> kept(tensors, false);
  for (int id : keep) {
    if (id < 0 || static_cast<size_t>(id) >= tensors) {
      throw Error(ErrorKind::kInternal,
                  "kept tensor id " + std::to_string(id) + " is not in a graph of " + std::to_string(tensors));
    }
    kept[static_cast<size_t>(id)] = true;
  }
  return kept;
}

TensorLifetimes tensorLifetimes(const ir::Graph& graph, const std::vector<int>& keep) {
  const size_t tensors = graph.tensors().size(), ops = graph.ops().size();
  const std::vector<bool> kept = keptTensors(graph, keep);
  // last[t]: the last op that reads or makes t; none for a feed no op reads.
  constexpr size_t kNone = static_cast<size_t>(-1);
  std::vector<size_t> last(tensors, kNone);
  for (size_t i = 0; i < ops; ++i) {
    for (int id : graph.ops()[i].inputs) last[static_cast<size_t>(id)] = i;
    for (int id : graph.ops()[i].outputs) last[static_cast<size_t>(id)] = i;
  }
  TensorLifetimes lifetimes;
  lifetimes.released_after.resize(ops);
  uint64_t held = 0;  // the feeds, then after each op what it made less what it released
  for (const ir::Tensor& tensor : graph.tensors()) {
    const auto t = static_cast<size_t>(tensor.id);
    if (graph.producer(tensor.id) != nullptr) continue;
    if (last[t] == kNone && !kept[t]) {
      lifetimes.unread_feeds.push_back(tensor.id);
    } else {
      held += tensor.bytes();
    }
  }
  lifetimes.peak_bytes = held;
  for (const ir::Tensor& tensor : graph.tensors()) {
    const auto t = static_cast<size_t>(tensor.id);
    if (!kept[t] && last[t] != kNone) lifetimes.released_after[last[t]].push_back(tensor.id);
  }
  for (size_t i = 0; i < ops; ++i) {
    for (int id : graph.ops()[i].outputs) held += graph.tensor(id).bytes();
    lifetimes.peak_bytes = std::max(lifetimes.peak_bytes, held);
    for (int id : lifetimes.released_after[i]) held -= graph.tensor(id).bytes();
  }
  return lifetimes;
}

}  // namespace tpusim::reference
