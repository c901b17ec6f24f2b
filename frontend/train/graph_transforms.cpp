#include "frontend/train/graph_transforms.hpp"

#include <functional>
#include <map>

#include "sim/common/error.hpp"

namespace tpusim {

ir::Graph rematerialize(const ir::Graph& graph, const std::vector<bool>& forward) {
  if (forward.size() != graph.ops().size())
    throw Error(ErrorKind::kInternal, "rematerialize: the forward marks do not cover the ops");
  ir::Graph out;
  std::map<int, int> map;    // tensor of `graph` -> its value in `out`, as first computed
  std::map<int, int> remat;  // forward activation -> its recomputed copy
  std::map<int, size_t> op_index;
  for (size_t i = 0; i < graph.ops().size(); ++i) op_index[graph.ops()[i].outputs[0]] = i;
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
    if (producer == nullptr || !forward[op_index.at(tensor)]) return map.at(tensor);
    auto done = remat.find(tensor);
    if (done != remat.end()) return done->second;
    std::vector<int> inputs;
    for (int input : producer->inputs) inputs.push_back(recomputed(input));
    const int copy = out.cloneOp(graph, *producer, inputs, producer->name + ".remat");
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
