#include "frontend/passes/pipeline_stages.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "frontend/passes/layers.hpp"
#include "frontend/train/loss_scaling.hpp"
#include "sim/common/error.hpp"

namespace tpusim {

namespace {

using ir::OpType;
using ir::TensorRole;

bool isForward(const ir::Op& op) {
  return op.phase == ir::Phase::kForward;
}
// Loss scaling's work on the gradients runs after the backward, on the stage of each gradient.
bool isBackward(const ir::Op& op) {
  return op.phase == ir::Phase::kBackward || op.phase == ir::Phase::kLossScaling;
}

// A precision policy's cast (frontend/train/precision_policy): an f32 weight, constant or
// graph input converted to the compute dtype before any op reads it. It is no layer of its
// own: every stage that reads the cast value casts for itself, as every stage that reads an
// f32 weight or input holds it.
bool isPolicyCast(const ir::Graph& graph, const ir::Op& op) {
  if (op.type != OpType::kCast || op.inputs.size() != 1 || graph.producer(op.inputs[0]) != nullptr) return false;
  const DType to = graph.tensor(op.outputs[0]).dtype;
  return graph.tensor(op.inputs[0]).dtype == DType::kF32 && (to == DType::kBF16 || to == DType::kF16);
}

// The weight, constant or input that `tensor` is a policy cast of, or -1.
int castSource(const ir::Graph& graph, int tensor) {
  const ir::Op* producer = graph.producer(tensor);
  return producer && isPolicyCast(graph, *producer) ? producer->inputs[0] : -1;
}

// Loss scaling's 0 and 1/S (frontend/train/loss_scaling): computed from the step's scale
// alone, by every stage that reads them.
bool readsOnlyLossScale(const ir::Graph& graph, const ir::Op& op) {
  return std::all_of(op.inputs.begin(), op.inputs.end(),
                     [&](int t) { return graph.producer(t) == nullptr && graph.tensor(t).name == kLossScaleTensor; });
}

// An op each stage that reads its value runs for itself: a policy cast, or one of those.
bool isReplicated(const ir::Graph& graph, const ir::Op& op) {
  return isPolicyCast(graph, op) || readsOnlyLossScale(graph, op);
}

// Loss scaling's one check over every gradient: the ops from the per-weight sums (kept,
// each on its weight's stage) to the "gradients finite" flag. Per op; none without it.
std::vector<bool> finitenessCheck(const ir::Graph& graph, int& flag_op) {
  const std::vector<ir::Op>& ops = graph.ops();
  std::vector<bool> in_check(ops.size(), false);
  flag_op = -1;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (graph.tensor(ops[i].outputs[0]).name == kGradientsFiniteTensor) flag_op = static_cast<int>(i);
  }
  std::vector<int> stack;
  if (flag_op >= 0) stack.push_back(flag_op);
  while (!stack.empty()) {
    const auto i = static_cast<size_t>(stack.back());
    stack.pop_back();
    if (in_check[i] || ops[i].type == OpType::kReduce) continue;
    in_check[i] = true;
    for (int input : ops[i].inputs) {
      if (const ir::Op* producer = graph.producer(input)) stack.push_back(static_cast<int>(producer - ops.data()));
    }
  }
  return in_check;
}

bool readsWeight(const ir::Graph& graph, const ir::Op& op) {
  return std::any_of(op.inputs.begin(), op.inputs.end(), [&](int t) {
    const int source = castSource(graph, t);
    return graph.tensor(source >= 0 ? source : t).role == TensorRole::kWeight;
  });
}

struct LayerAssignment {
  std::vector<std::string> layers;  // the pipeline layers, in order
  std::vector<int> of_op;           // per op: its pipeline layer, or -1 (placed by its operands)
};

LayerAssignment assignPipelineLayers(const ir::Graph& graph) {
  const std::vector<std::string> names = assignLayers(graph);
  const std::vector<ir::Op>& ops = graph.ops();
  LayerAssignment out;
  std::map<std::string, int> weighted;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!isForward(ops[i]) || isPolicyCast(graph, ops[i]) || !readsWeight(graph, ops[i]) || weighted.count(names[i])) {
      continue;
    }
    weighted.emplace(names[i], static_cast<int>(out.layers.size()));
    out.layers.push_back(names[i]);
  }
  std::map<std::string, int> forward_layer;  // every forward layer name -> its pipeline layer
  out.of_op.assign(ops.size(), -1);
  int current = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!isForward(ops[i]) || isPolicyCast(graph, ops[i])) continue;
    const auto found = weighted.find(names[i]);
    if (found != weighted.end()) current = found->second;
    out.of_op[i] = current;
    forward_layer.emplace(names[i], current);
  }
  // A policy cast takes the layer of the first forward op that reads it, and so do its
  // gradient and its weight's update (both named, by frontend/passes/layers, after the cast).
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!isForward(ops[i]) || isPolicyCast(graph, ops[i])) continue;
    for (int input : ops[i].inputs) {
      const ir::Op* cast = graph.producer(input);
      if (!cast || !isPolicyCast(graph, *cast)) continue;
      const auto c = static_cast<size_t>(cast - ops.data());
      if (out.of_op[c] >= 0) continue;
      out.of_op[c] = out.of_op[i];
      forward_layer[names[c]] = out.of_op[i];
    }
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    // A gradient sum goes where its operands are, so that a stage sends the sum, not its parts.
    if (isForward(ops[i]) || ops[i].name.find(".grad_sum") != std::string::npos) continue;
    const auto found = forward_layer.find(names[i]);
    if (found != forward_layer.end()) out.of_op[i] = found->second;
  }
  return out;
}

int aliasRoot(const ir::Graph& graph, int tensor) {
  while (graph.tensor(tensor).alias_of >= 0) tensor = graph.tensor(tensor).alias_of;
  return tensor;
}

}  // namespace

std::vector<std::string> pipelineLayers(const ir::Graph& graph) {
  return assignPipelineLayers(graph).layers;
}

std::vector<int> pipelineLayerOfOps(const ir::Graph& graph) {
  return assignPipelineLayers(graph).of_op;
}

PipelineStages splitPipelineStages(const ir::Graph& graph, int64_t stages, const std::string& model) {
  const LayerAssignment assigned = assignPipelineLayers(graph);
  const int64_t layers = static_cast<int64_t>(assigned.layers.size());
  if (stages < 1 || layers == 0 || layers % stages != 0) {
    throw Error(ErrorKind::kInvalidConfig, "--pp " + std::to_string(stages) + " does not divide the " +
                                               std::to_string(layers) + " layers of " + model +
                                               " (a layer is a module with weights; docs/strategies.md)");
  }
  const int64_t per_stage = layers / stages;
  const std::vector<ir::Op>& ops = graph.ops();
  int flag_op = -1;
  const std::vector<bool> in_check = finitenessCheck(graph, flag_op);
  std::vector<int> check_sums;  // the per-weight sums the check reads, in graph order
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!in_check[i]) continue;
    for (int input : ops[i].inputs) {
      const ir::Op* producer = graph.producer(input);
      if (producer && producer->type == OpType::kReduce) check_sums.push_back(static_cast<int>(producer - ops.data()));
    }
  }
  std::sort(check_sums.begin(), check_sums.end());

  // Each op's stage; one placed by its operands takes the earliest stage that made one
  // (not counting the values every stage makes for itself).
  std::vector<int> stage_of(ops.size(), 0);
  std::vector<int> tensor_stage(graph.tensors().size(), -1);  // of its producer
  for (size_t i = 0; i < ops.size(); ++i) {
    int stage = assigned.of_op[i] >= 0 ? static_cast<int>(assigned.of_op[i] / per_stage) : -1;
    if (stage < 0) {
      for (int input : ops[i].inputs) {
        const int made = tensor_stage[static_cast<size_t>(input)];
        if (made >= 0) stage = stage < 0 ? made : std::min(stage, made);
      }
      stage = std::max(stage, 0);
    }
    stage_of[i] = stage;
    if (isReplicated(graph, ops[i]) || in_check[i]) continue;
    for (int output : ops[i].outputs) tensor_stage[static_cast<size_t>(output)] = stage;
  }

  // Who reads each tensor, by stage (the check reads the sums where they are).
  std::vector<std::set<int>> read_in(graph.tensors().size());
  for (size_t i = 0; i < ops.size(); ++i) {
    if (in_check[i]) continue;
    for (int input : ops[i].inputs) read_in[static_cast<size_t>(input)].insert(stage_of[i]);
  }
  const std::set<int> outputs(graph.outputs().begin(), graph.outputs().end());

  PipelineStages out;
  out.loss_scaling = flag_op >= 0;
  out.stages.resize(static_cast<size_t>(stages));
  for (int64_t s = 0; s < stages; ++s) {
    PipelineStageGraph& stage = out.stages[static_cast<size_t>(s)];
    stage.layers.assign(assigned.layers.begin() + s * per_stage, assigned.layers.begin() + (s + 1) * per_stage);
    ir::Graph& g = stage.graph;
    std::vector<int> map(graph.tensors().size(), -1);
    const auto leaf = [&](int t) {
      int& mapped = map[static_cast<size_t>(t)];
      if (mapped >= 0) return mapped;
      const ir::Tensor& x = graph.tensor(t);
      if (x.role == TensorRole::kWeight) {
        mapped = g.addWeight(x.name, x.shape, x.dtype);
      } else if (x.role == TensorRole::kConstant) {
        mapped = g.addConstant(x.name, x.shape, x.dtype);
      } else {
        mapped = g.addInput(x.name, x.shape, x.dtype, x.role);  // an input, state, or received from a neighbour
      }
      return mapped;
    };
    const auto source = [&](int t) {
      const ir::Op* producer = graph.producer(t);
      if (!producer || !isReplicated(graph, *producer) || map[static_cast<size_t>(t)] >= 0) return leaf(t);
      std::vector<int> inputs;  // made here, where it is read
      for (int input : producer->inputs) inputs.push_back(leaf(input));
      const int made = g.cloneOp(graph, *producer, inputs, producer->name);
      g.rename(made, graph.tensor(t).name);
      return map[static_cast<size_t>(t)] = made;
    };
    // The stage's part of the check: its own gradients' sums added up, plus what the other
    // stages' parts add up to (the all-reduce of the partial sums, api/pipeline_run).
    const auto checkHere = [&] {
      g.setPhase(ir::Phase::kLossScaling);
      const TensorRole grad = TensorRole::kGradient;
      std::vector<int> sums;
      for (int j : check_sums) {
        const auto sum = static_cast<size_t>(j);
        if (stage_of[sum] == s) sums.push_back(map[static_cast<size_t>(ops[sum].outputs[0])]);
      }
      for (int level = 0; sums.size() > 1; ++level) {
        std::vector<int> next;
        for (size_t k = 0; k + 1 < sums.size(); k += 2) {
          next.push_back(g.add("loss_scale.sum" + std::to_string(level) + "." + std::to_string(k / 2), sums[k],
                               sums[k + 1], grad));
        }
        if (sums.size() % 2 == 1) next.push_back(sums.back());
        sums = std::move(next);
      }
      int total = g.addInput(kLossScaleOtherStagesTensor, {}, DType::kF32, TensorRole::kInput);
      if (!sums.empty()) {
        g.rename(sums[0], kLossScalePartialTensor);
        g.markOutput(sums[0]);
        total = g.add("loss_scale.total", sums[0], total, grad);
      }
      const int difference = g.binary(OpType::kSub, "loss_scale.difference", total, total, grad);
      const int flag = g.compare(ir::CompareDirection::kEq, "loss_scale.finite", difference, difference);
      g.rename(flag, kGradientsFiniteTensor);
      g.markOutput(flag);
      return flag;
    };
    std::set<int> kept;  // alias roots kept from forward to backward
    for (size_t i = 0; i < ops.size(); ++i) {
      if (static_cast<int>(i) == flag_op) map[static_cast<size_t>(ops[i].outputs[0])] = checkHere();
      if (stage_of[i] != s || isReplicated(graph, ops[i]) || in_check[i]) continue;
      const ir::Op& op = ops[i];
      std::vector<int> inputs;
      for (int input : op.inputs) inputs.push_back(source(input));
      const int made = g.cloneOp(graph, op, inputs, op.name);
      const int original = op.outputs[0];
      g.rename(made, graph.tensor(original).name);
      map[static_cast<size_t>(original)] = made;
      const std::set<int>& readers = read_in[static_cast<size_t>(original)];
      if (outputs.count(original) || std::any_of(readers.begin(), readers.end(), [&](int r) { return r != s; })) {
        g.markOutput(made);
      }
      if (!isBackward(op)) continue;
      for (int input : op.inputs) {
        const ir::Op* producer = graph.producer(input);
        const TensorRole role = graph.tensor(input).role;
        // A weight's cast and loss scaling's scalars are the same for every micro-batch:
        // the stage holds them once.
        const int cast_of = castSource(graph, input);
        if (cast_of >= 0 && graph.tensor(cast_of).role != TensorRole::kInput) continue;
        if (producer &&
            (readsOnlyLossScale(graph, *producer) || in_check[static_cast<size_t>(producer - ops.data())])) {
          continue;
        }
        if ((producer && isForward(*producer)) ||
            (!producer && (role == TensorRole::kInput || role == TensorRole::kLabel))) {
          kept.insert(aliasRoot(graph, input));
        }
      }
    }
    for (int t : kept) stage.activation_bytes += graph.tensor(t).bytes();
  }

  // Boundary crossings: a tensor made on stage a and read on stage b crosses every
  // boundary between them, each once.
  std::vector<std::vector<StageTransfer>> by_boundary(static_cast<size_t>(stages));
  for (size_t i = 0; i < ops.size(); ++i) {
    const int made = stage_of[i];
    const int t = ops[i].outputs[0];
    const std::set<int>& readers = read_in[static_cast<size_t>(t)];
    if (readers.empty() || isReplicated(graph, ops[i]) || in_check[i]) continue;
    const int highest = *readers.rbegin(), lowest = *readers.begin();
    const ir::Tensor& x = graph.tensor(t);
    for (int from = made; from < highest; ++from) {
      by_boundary[static_cast<size_t>(from)].push_back(
          {x.name, x.bytes(), static_cast<uint32_t>(from), static_cast<uint32_t>(from + 1), isBackward(ops[i])});
    }
    for (int from = made; from > lowest; --from) {
      by_boundary[static_cast<size_t>(from - 1)].push_back(
          {x.name, x.bytes(), static_cast<uint32_t>(from), static_cast<uint32_t>(from - 1), isBackward(ops[i])});
    }
  }
  for (std::vector<StageTransfer>& boundary : by_boundary) {
    std::stable_sort(boundary.begin(), boundary.end(),
                     [](const StageTransfer& a, const StageTransfer& b) { return !a.gradient && b.gradient; });
    out.transfers.insert(out.transfers.end(), boundary.begin(), boundary.end());
  }
  return out;
}

}  // namespace tpusim
