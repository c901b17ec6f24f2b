#include "api/functional.hpp"

#include <algorithm>
#include <random>

#include "api/parallel_degrees.hpp"
#include "frontend/lower/lower.hpp"
#include "frontend/passes/data_parallel.hpp"
#include "frontend/train/int8_quantization.hpp"
#include "frontend/train/loss_scaling.hpp"
#include "reference/cpu/cpu_executor.hpp"
#include "sim/common/error.hpp"
#include "sim/common/numerics.hpp"
#include "sim/mxu/array_config.hpp"

namespace tpusim {

namespace {

numerics::MatmulPrecision precisionOf(const std::string& name) {
  switch (matmulPassesOf(name)) {  // checks the name
    case 3: return numerics::MatmulPrecision::kHigh;
    case 6: return numerics::MatmulPrecision::kHighest;
    default: return numerics::MatmulPrecision::kDefault;
  }
}

// How many values an integer input may take: the class count of the loss it
// labels (the logits' last dimension), or the rows of the table it indexes.
int64_t choicesFor(const ir::Graph& graph, const ir::Tensor& tensor) {
  for (const ir::Op& op : graph.ops()) {
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (op.inputs[i] != tensor.id || i == 0) continue;
      const ir::Shape& first = graph.tensor(op.inputs[0]).shape;
      if (first.empty()) continue;
      return op.type == ir::OpType::kGather ? first[0] : first.back();
    }
  }
  return 2;
}

// Deterministic per tensor: the seed and the tensor's name pick the stream.
ir::TensorValue generated(const ir::Graph& graph, const ir::Tensor& tensor, uint64_t seed) {
  uint64_t stream = seed;
  for (char ch : tensor.name) stream = stream * 1099511628211ull + static_cast<unsigned char>(ch);
  std::mt19937_64 rng(stream);
  ir::TensorValue value = ir::TensorValue::zeros(tensor.shape, tensor.dtype);
  if (ir::TensorValue::isFloating(tensor.dtype)) {
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    for (double& v : value.floats) v = uniform(rng);
    numerics::roundInPlace(tensor.dtype, std::span<double>(value.floats));
  } else {
    std::uniform_int_distribution<int64_t> choice(0, std::max<int64_t>(1, choicesFor(graph, tensor)) - 1);
    for (int64_t& v : value.ints) v = choice(rng);
  }
  return value;
}

// A made-up weight (frontend/import/weight_init.hpp): its own stream of the seed, apart from the inputs'.
ir::TensorValue madeUp(const ir::Tensor& tensor, const WeightInit& init, uint64_t seed) {
  ir::TensorValue value = ir::TensorValue::zeros(tensor.shape, tensor.dtype);
  if (!ir::TensorValue::isFloating(tensor.dtype)) return value;  // integer weights: 0
  if (init.kind == WeightInit::Kind::kOnes) {
    std::fill(value.floats.begin(), value.floats.end(), 1.0);
  } else if (init.kind == WeightInit::Kind::kUniform) {
    uint64_t stream = seed ^ 0x9e3779b97f4a7c15ull;
    for (char ch : tensor.name) stream = stream * 1099511628211ull + static_cast<unsigned char>(ch);
    std::mt19937_64 rng(stream);
    std::uniform_real_distribution<double> uniform(-init.bound, init.bound);
    for (double& v : value.floats) v = uniform(rng);
    numerics::roundInPlace(tensor.dtype, std::span<double>(value.floats));
  }
  return value;
}

nlohmann::ordered_json describe(const std::string& name, const ir::TensorValue& value) {
  nlohmann::ordered_json entry;
  entry["name"] = name;
  entry["shape"] = value.shape;
  entry["dtype"] = dtypeName(value.dtype);
  entry["file"] = functionalFileName(name);
  return entry;
}

}  // namespace

reference::MxuNumericsOptions mxuNumericsOf(const HardwareParams& hw, const RunRequest& request) {
  const ArrayConfig array = arrayConfigOf(hw.config());
  return {array.dataflow, array.rows, precisionOf(request.matmul_precision)};
}

std::string valueFileName(const std::string& folder, const std::string& tensor) {
  std::string name = tensor;
  for (char& ch : name) {
    const bool keep = std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-' || ch == '_';
    if (!keep) ch = '_';
  }
  return folder + "/" + name + ".npy";
}

std::string functionalFileName(const std::string& tensor) { return valueFileName("functional", tensor); }

NamedValues generatedInputs(const ModelGraph& built, uint64_t seed) {
  NamedValues inputs;
  for (const ir::Tensor& tensor : built.graph.tensors()) {
    const bool fed = tensor.role == ir::TensorRole::kInput || tensor.role == ir::TensorRole::kLabel;
    if (!fed || built.graph.producer(tensor.id) != nullptr || built.model.initializers.count(tensor.name)) continue;
    inputs.emplace_back(tensor.name, generated(built.graph, tensor, seed));
  }
  return inputs;
}

NamedValues generatedWeights(const ModelGraph& built, uint64_t seed) {
  NamedValues weights;
  for (const ir::Tensor& tensor : built.graph.tensors()) {
    if (built.graph.producer(tensor.id) != nullptr) continue;
    const auto init = built.model.weight_inits.find(tensor.name);
    if (init != built.model.weight_inits.end()) {
      weights.emplace_back(tensor.name, madeUp(tensor, init->second, seed));
      continue;
    }
    const auto quantized = built.model.made_up_quantized.find(tensor.name);
    if (quantized == built.model.made_up_quantized.end()) continue;
    // The f32 weight as an f32 run makes it up (the same name, so the same values), quantized.
    const ImportedModel::MadeUpQuantized& from = quantized->second;
    const ir::Tensor f32{-1, from.weight, from.shape, DType::kF32, ir::TensorRole::kWeight, -1};
    QuantizedWeight q = quantizeWeight(madeUp(f32, built.model.weight_inits.at(from.weight), seed), from.channels,
                                       from.channel_stride, from.scale_shape);
    weights.emplace_back(tensor.name, std::move(q.values));
    weights.emplace_back(from.scales, std::move(q.scales));
  }
  return weights;
}

nlohmann::ordered_json generatedWeightsSummary(const ModelGraph& built, uint64_t seed) {
  std::map<std::string, int> rules;
  int64_t count = 0;
  for (const ir::Tensor& tensor : built.graph.tensors()) {
    auto init = built.model.weight_inits.find(tensor.name);
    const auto quantized = built.model.made_up_quantized.find(tensor.name);
    if (quantized != built.model.made_up_quantized.end()) {
      init = built.model.weight_inits.find(quantized->second.weight);  // quantized from a made-up weight
    }
    if (init == built.model.weight_inits.end() || built.graph.producer(tensor.id) != nullptr) continue;
    ++count;
    // The rule without its fan-in, so that the summary counts kinds of weight.
    ++rules[init->second.rule.substr(0, init->second.rule.find(", fan_in"))];
  }
  nlohmann::ordered_json summary;
  summary["count"] = count;
  summary["seed"] = seed;
  summary["method"] =
      "the model stores its weights' shapes only: their values are made up, PyTorch's default initializations "
      "chosen by the op that reads each weight (frontend/import/weight_init.hpp); the same seed gives the same "
      "values to tpusim run --functional and tpusim reference; under --precision int8 a quantized weight's int8 "
      "values and scales are quantized from its made-up f32 values";
  summary["rules"] = rules;
  return summary;
}

std::vector<std::map<std::string, ir::TensorValue>> replicaFeeds(const ModelGraph& built, uint64_t seed,
                                                                 int64_t replicas) {
  const NamedValues weights = generatedWeights(built, seed);
  std::vector<std::map<std::string, ir::TensorValue>> feeds;
  for (int64_t replica = 0; replica < replicas; ++replica) {
    const NamedValues inputs = generatedInputs(built, seed + static_cast<uint64_t>(replica));
    std::map<std::string, ir::TensorValue> given(inputs.begin(), inputs.end());
    given.insert(weights.begin(), weights.end());
    feeds.push_back(completeFeeds(built, std::move(given)));
  }
  return feeds;
}

std::vector<int> stepOutputIds(const ir::Graph& graph) {
  std::vector<int> ids = graph.outputs();
  for (const ir::Op& op : graph.ops()) {
    if (op.type == ir::OpType::kSgdUpdate || op.type == ir::OpType::kOptimizerUpdate) ids.push_back(op.outputs[0]);
  }
  return ids;
}

FunctionalRun runFunctional(const RunRequest& request, const HardwareParams& hw) {
  const ModelGraph built = buildModelGraph(request);
  // A data-parallel slice runs every replica, their gradients summed as the simulated
  // graph's all-reduces sum them (frontend/passes/data_parallel.hpp); a tensor-parallel
  // group's values are the unsharded model's.
  const ParallelDegrees degrees = parallelDegreesOf(request, sliceOf(request, hw));
  const ir::Graph graph = allReduceGradients(built.graph, degrees.dp);
  FunctionalRun run;
  run.inputs = generatedInputs(built, request.seed);
  std::vector<std::map<std::string, ir::TensorValue>> feeds = replicaFeeds(built, request.seed, degrees.dp);
  const reference::MxuNumericsOptions mxu = mxuNumericsOf(hw, request);
  const auto& tensors = graph.tensors();
  const bool loss_scaled = std::any_of(tensors.begin(), tensors.end(),
                                       [](const ir::Tensor& t) { return t.name == kLossScaleTensor; });
  const auto finite_flag = std::find_if(tensors.begin(), tensors.end(),
                                        [](const ir::Tensor& t) { return t.name == kGradientsFiniteTensor; });
  if (loss_scaled && finite_flag == tensors.end()) {
    throw Error(ErrorKind::kInternal, "a loss-scaled step without its gradients-finite flag");
  }
  // Read after the step: its outputs, and the flag that says whether to run it again.
  std::vector<int> read = stepOutputIds(graph);
  if (loss_scaled) read.push_back(finite_flag->id);
  const reference::CpuExecutor executor(graph, reference::CpuOptions{request.threads, mxu}, read);
  // Dynamic loss scaling's controller: a step whose gradients are not all finite is
  // skipped (its results dropped, the weights and optimizer state kept) and run again
  // at half the scale, until a step is finite or the scale is 1.
  nlohmann::ordered_json attempts = nlohmann::ordered_json::array();
  double scale = kInitialLossScale;
  std::vector<std::vector<ir::TensorValue>> values;
  while (true) {
    if (loss_scaled) {
      for (auto& replica_feeds : feeds) replica_feeds[kLossScaleTensor] = ir::TensorValue{{}, DType::kF32, {scale}, {}};
    }
    values = executor.runReplicas(feeds);
    if (!loss_scaled) break;
    const bool finite = std::all_of(values.begin(), values.end(), [&](const std::vector<ir::TensorValue>& replica) {
      return replica.at(static_cast<size_t>(finite_flag->id)).ints.at(0) != 0;
    });
    attempts.push_back({{"loss_scale", scale}, {"gradients_finite", finite}});
    if (finite || scale <= 1) break;
    scale /= 2;
  }
  for (int id : stepOutputIds(graph)) {
    run.outputs.emplace_back(graph.tensor(id).name, values.front()[static_cast<size_t>(id)]);
  }
  nlohmann::ordered_json& s = run.summary;
  s["method"] = "the training graph evaluated op by op on the host; matmuls and convolutions as the MXUs compute them";
  s["dataflow"] = dataflowName(mxu.dataflow);
  s["rows"] = mxu.rows;
  s["matmul_precision"] = request.matmul_precision;
  s["seed"] = request.seed;
  s["replicas"] = degrees.dp;
  if (degrees.dp > 1) {
    s["replicas_method"] =
        "data parallel: the " + std::to_string(degrees.dp) +
        " replicas' steps in lockstep, op by op, each gradient summed across them in replica order (in float, "
        "rounded to its dtype once) before the optimizer reads it; replica r's inputs are generated from seed + r; "
        "the values written are replica 0's (every replica ends with the same weights)";
  }
  if (degrees.tp > 1) {
    s["tensor_parallel"] = "the values of the unsharded model: a tensor-parallel group's " +
                           std::to_string(degrees.tp) + " shards and their all-reduces are not computed apart";
  }
  if (!built.model.weight_inits.empty()) s["generated_weights"] = generatedWeightsSummary(built, request.seed);
  if (loss_scaled) {
    s["loss_scaling"] = {
        {"method",
         "dynamic (Keras LossScaleOptimizer): a step with a non-finite gradient is skipped and run again on the "
         "same batch at half the scale"},
        {"initial_scale", kInitialLossScale},
        {"growth_steps", kLossScaleGrowthSteps},
        {"attempts", attempts},
        {"skipped_steps", attempts.size() - 1},
        {"loss_scale", scale},
        {"gradients_finite", attempts.back()["gradients_finite"]}};
  }
  s["inputs"] = nlohmann::ordered_json::array();
  for (const auto& [name, value] : run.inputs) s["inputs"].push_back(describe(name, value));
  s["outputs"] = nlohmann::ordered_json::array();
  for (const auto& [name, value] : run.outputs) s["outputs"].push_back(describe(name, value));
  return run;
}

}  // namespace tpusim
