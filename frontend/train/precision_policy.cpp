#include "frontend/train/precision_policy.hpp"

#include <map>
#include <vector>

#include "frontend/train/int8_quantization.hpp"
#include "sim/common/error.hpp"

namespace tpusim {

using ir::Graph;
using ir::Op;
using ir::OpType;
using ir::TensorRole;

PrecisionPolicy parsePrecisionPolicy(const std::string& name) {
  if (name == "float32") return PrecisionPolicy::kFloat32;
  if (name == "mixed_bfloat16") return PrecisionPolicy::kMixedBfloat16;
  if (name == "mixed_float16") return PrecisionPolicy::kMixedFloat16;
  if (name == "int8") return PrecisionPolicy::kInt8;
  throw Error(ErrorKind::kInvalidConfig,
              "unknown precision policy '" + name + "' (use float32, mixed_bfloat16, mixed_float16 or int8)");
}

const char* precisionPolicyName(PrecisionPolicy policy) {
  switch (policy) {
    case PrecisionPolicy::kFloat32: return "float32";
    case PrecisionPolicy::kMixedBfloat16: return "mixed_bfloat16";
    case PrecisionPolicy::kMixedFloat16: return "mixed_float16";
    case PrecisionPolicy::kInt8: return "int8";
  }
  return "float32";
}

bool needsLossScaling(PrecisionPolicy policy) { return policy == PrecisionPolicy::kMixedFloat16; }

void checkPolicyForMode(PrecisionPolicy policy, const std::string& mode) {
  if (policy == PrecisionPolicy::kInt8 && mode != "inference") {
    throw Error(ErrorKind::kUnsupported,
                "--precision int8 is post-training quantization for --mode inference; int8 training is not supported");
  }
}

namespace {

bool isLoss(OpType type) { return type == OpType::kSoftmaxCrossEntropy || type == OpType::kNllLoss; }

}  // namespace

void applyPrecisionPolicy(ImportedModel& model, PrecisionPolicy policy) {
  if (policy == PrecisionPolicy::kFloat32) return;
  if (policy == PrecisionPolicy::kInt8) {
    applyInt8Quantization(model);
    return;
  }
  const DType compute = policy == PrecisionPolicy::kMixedFloat16 ? DType::kF16 : DType::kBF16;
  const std::string suffix = std::string("/cast_") + dtypeName(compute);
  const Graph& source = model.graph;
  Graph graph;
  std::map<int, int> map;  // source tensor -> its value in `graph`, in the compute dtype where it is f32
  for (const ir::Tensor& tensor : source.tensors()) {
    if (source.producer(tensor.id) != nullptr) continue;
    const bool f32 = tensor.dtype == DType::kF32;
    int id = -1;
    if (tensor.role == TensorRole::kConstant) {
      id = graph.addConstant(tensor.name, tensor.shape, tensor.dtype);
    } else if (tensor.role == TensorRole::kWeight) {
      id = graph.addWeight(tensor.name, tensor.shape, tensor.dtype);
    } else {
      id = graph.addInput(tensor.name, tensor.shape, tensor.dtype, tensor.role);
    }
    map[tensor.id] = f32 && tensor.role != TensorRole::kLabel ? graph.cast(tensor.name + suffix, id, compute) : id;
  }
  std::map<int, int> as_f32;  // compute-dtype values cast back, each once
  const auto toF32 = [&](int id) {
    if (graph.tensor(id).dtype != compute) return id;
    auto [at, added] = as_f32.try_emplace(id, -1);
    if (added) at->second = graph.cast(graph.tensor(id).name + "/cast_f32", id, DType::kF32);
    return at->second;
  };
  for (const Op& op : source.ops()) {
    std::vector<int> inputs;
    for (int input : op.inputs) inputs.push_back(map.at(input));
    if (isLoss(op.type)) {
      for (int& input : inputs) input = toF32(input);
    }
    const ir::Tensor& out = source.tensor(op.outputs[0]);
    const DType dtype = out.dtype == DType::kF32 && !isLoss(op.type) ? compute : out.dtype;
    const int id = graph.cloneOpAs(source, op, inputs, op.name, dtype);
    graph.rename(id, out.name);
    map[op.outputs[0]] = id;
  }
  for (int output : source.outputs()) {
    const int id = map.at(output);
    if (source.tensor(output).dtype != DType::kF32 || graph.tensor(id).dtype == DType::kF32) {
      graph.markOutput(id);
      continue;
    }
    // The f32 copy takes the output's name; the compute-dtype value is "<name>:compute".
    const std::string name = graph.tensor(id).name;
    const int f32 = toF32(id);
    graph.rename(id, name + ":compute");
    graph.rename(f32, name);
    graph.markOutput(f32);
  }
  model.graph = std::move(graph);
}

}  // namespace tpusim
