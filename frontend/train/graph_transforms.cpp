#include "frontend/train/graph_transforms.hpp"

#include <functional>
#include <map>

#include "sim/common/error.hpp"

namespace tpusim {

namespace {

constexpr std::string_view kRecomputedSuffix = ".remat";

// Per tensor: a forward activation kept from the forward pass (see the header).
std::vector<bool> layerCheckpoints(const ir::Graph& graph, const std::vector<bool>& forward,
                                   const std::vector<int>& layer) {
  std::vector<bool> kept(graph.tensors().size(), false);
  for (int output : graph.outputs()) kept[static_cast<size_t>(output)] = true;
  const std::vector<ir::Op>& ops = graph.ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!forward[i]) continue;
    for (int input : ops[i].inputs) {
      const ir::Op* producer = graph.producer(input);
      if (producer != nullptr && layer[static_cast<size_t>(producer - ops.data())] != layer[i]) {
        kept[static_cast<size_t>(input)] = true;
      }
    }
  }
  return kept;
}

}  // namespace

bool isRecomputation(std::string_view op_name) {
  return op_name.find(kRecomputedSuffix) != std::string_view::npos;
}

ir::Graph rematerialize(const ir::Graph& graph, const std::vector<bool>& forward, const std::vector<int>& layer) {
  if (forward.size() != graph.ops().size() || layer.size() != graph.ops().size())
    throw Error(ErrorKind::kInternal, "rematerialize: the forward or layer marks do not cover the ops");
  const std::vector<bool> checkpoint = layerCheckpoints(graph, forward, layer);
  ir::Graph out;
  std::map<int, int> map;    // tensor of `graph` -> its value in `out`, as first computed
  std::map<int, int> remat;  // forward activation -> its recomputed copy
  for (const ir::Tensor& t : graph.tensors()) {
    if (graph.producer(t.id) != nullptr) continue;
    if (t.role == ir::TensorRole::kWeight) {
      map[t.id] = out.addWeight(t.name, t.shape, t.dtype);
    } else if (t.role == ir::TensorRole::kConstant) {
      map[t.id] = out.addConstant(t.name, t.shape, t.dtype);
    } else {
      map[t.id] = out.addInput(t.name, t.shape, t.dtype, t.role);
    }
  }
  // The value of `tensor` for a backward op: a checkpoint as is, a forward activation recomputed.
  std::function<int(int)> recomputed = [&](int tensor) -> int {
    const ir::Op* producer = graph.producer(tensor);
    const bool activation = producer != nullptr && forward[static_cast<size_t>(producer - graph.ops().data())];
    if (!activation || checkpoint[static_cast<size_t>(tensor)]) return map.at(tensor);
    auto done = remat.find(tensor);
    if (done != remat.end()) return done->second;
    std::vector<int> inputs;
    for (int input : producer->inputs) inputs.push_back(recomputed(input));
    const int copy = out.cloneOp(graph, *producer, inputs, producer->name + std::string(kRecomputedSuffix));
    out.annotate(out.ops().size() - 1).phase = ir::Phase::kBackward;  // a backward op needs it
    remat[tensor] = copy;
    return copy;
  };
  for (size_t i = 0; i < graph.ops().size(); ++i) {
    const ir::Op& op = graph.ops()[i];
    std::vector<int> inputs;
    for (int input : op.inputs) inputs.push_back(forward[i] ? map.at(input) : recomputed(input));
    const int result = out.cloneOp(graph, op, inputs, op.name);
    out.rename(result, graph.tensor(op.outputs[0]).name);
    map[op.outputs[0]] = result;
  }
  for (int output : graph.outputs()) out.markOutput(map.at(output));
  return out;
}

}  // namespace tpusim
