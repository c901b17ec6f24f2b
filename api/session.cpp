#include "api/session.hpp"

#include "api/functional.hpp"
#include "api/host_run.hpp"
#include "api/option_rules.hpp"
#include "api/parallel_degrees.hpp"
#include "api/pipeline_run.hpp"
#include "api/precision_rule.hpp"
#include "api/precision_schedule.hpp"
#include "api/ps_run.hpp"
#include "api/strategy.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "frontend/compile.hpp"
#include "frontend/import/hlo_import.hpp"
#include "frontend/import/onnx_import.hpp"
#include "frontend/program_io.hpp"
#include "frontend/train/loss_scaling.hpp"
#include "frontend/train/precision_policy.hpp"
#include "frontend/train/training_graph.hpp"
#include "reference/cpu/cpu_executor.hpp"
#include "report/report.hpp"
#include "report/step_breakdown.hpp"
#include "sim/chip/driver.hpp"
#include "sim/common/error.hpp"
#include "sim/common/log.hpp"
#include "sim/common/numerics.hpp"
#include "sim/hbm/cmem_config.hpp"

namespace tpusim {

HardwareParams resolveHardware(const RunRequest& request) {
  HardwareParams hw = HardwareParams::load(request.hw);
  hw.apply(request.overrides);
  cmemGeometryOf(hw.config());  // CMEM's parameters against one another, before anything compiles
  return hw;
}

std::optional<Topology> sliceOf(const RunRequest& request, const HardwareParams& hw) {
  return strategySlice(strategyFromName(request.strategy), request.topology, request.workers, hw);
}

namespace {

// A saved Program keeps the slice it was compiled for; --topology may only restate it.
void checkSavedSlice(const RunRequest& request, const program::Program& program, const HardwareParams& hw) {
  if (request.topology.empty()) return;
  const std::optional<Topology> asked = sliceOf(request, hw);
  const uint32_t replicas = program.replicas() < 1 ? 1 : program.replicas();
  if (static_cast<uint32_t>(asked->numChips()) != replicas ||
      (replicas > 1 && asked->shapeString() != program.topology_shape())) {
    throw Error(ErrorKind::kInvalidConfig,
                "--topology " + asked->shapeString() + " (" + std::to_string(asked->numChips()) +
                    " chips) does not match " + request.model_path + ", compiled for " + std::to_string(replicas) +
                    " replicas" + (replicas > 1 ? " on " + program.topology_shape() : std::string()) +
                    "; recompile the model");
  }
}

}  // namespace

program::Program compileRequest(const RunRequest& request, const HardwareParams& hw, std::vector<PassTiming>* timings) {
  checkOptionRules(request);
  if (!std::filesystem::exists(request.model_path)) {
    throw Error(ErrorKind::kInvalidInput, "model file '" + request.model_path + "' does not exist");
  }
  if (isProgramPath(request.model_path)) {
    const Strategy strategy = strategyFromName(request.strategy);
    if (strategy != Strategy::kNone && strategy != Strategy::kParameterServer) {
      throw Error(ErrorKind::kInvalidConfig, std::string("--strategy ") + strategyName(strategy) +
                                                 " compiles a model; a saved Program runs on the slice it was "
                                                 "compiled for");
    }
    program::Program program = readProgram(request.model_path);
    if (request.precision != "float32") {
      throw Error(ErrorKind::kInvalidConfig,
                  "--precision applies when compiling a model; " + request.model_path + " is already compiled");
    }
    if (request.batch && static_cast<uint64_t>(*request.batch) != program.batch()) {
      throw Error(ErrorKind::kInvalidConfig, "--batch applies when compiling a model; " + request.model_path +
                                                 " was compiled for batch " + std::to_string(program.batch()));
    }
    if (request.mode && *request.mode != program.mode()) {
      throw Error(ErrorKind::kInvalidConfig,
                  request.model_path + " was compiled for " + program.mode() + ", not " + *request.mode);
    }
    checkSavedSlice(request, program, hw);
    const uint32_t saved_tp = program.tensor_parallel() < 1 ? 1 : program.tensor_parallel();
    if (request.tensor_parallel != 1 && static_cast<uint32_t>(request.tensor_parallel) != saved_tp) {
      throw Error(ErrorKind::kInvalidConfig, "--tp " + std::to_string(request.tensor_parallel) + " does not match " +
                                                 request.model_path + ", compiled for --tp " +
                                                 std::to_string(saved_tp) + "; recompile the model");
    }
    if (program.target_hw() != hw.name()) {
      spdlog::warn("{} was compiled for {}; running it on {}", request.model_path, program.target_hw(), hw.name());
    }
    return program;
  }
  const auto start = std::chrono::steady_clock::now();
  const ModelGraph built = buildModelGraph(request);
  const std::chrono::duration<double> built_in = std::chrono::steady_clock::now() - start;
  spdlog::debug("{} graph:\n{}", built.mode, built.graph.toString());
  const std::string name = std::filesystem::path(request.model_path).filename().string();
  CompileOptions options;
  options.print_ir_after = request.print_ir_after;
  options.ir_out = &std::cerr;
  LowerOptions lower{name, built.mode, static_cast<uint64_t>(built.model.batch)};
  lower.matmul_precision = request.matmul_precision;
  lower.tiling_objective = request.tiling_objective;
  lower.topology = sliceOf(request, hw);
  const ParallelDegrees degrees = parallelDegreesOf(request, lower.topology);
  if (degrees.pp > 1) {
    throw Error(ErrorKind::kUnsupported, "--pp " + std::to_string(degrees.pp) +
                                             ": a pipeline is one Program per stage; tpusim run simulates it, "
                                             "tpusim compile does not write it");
  }
  lower.tensor_parallel = degrees.tp;
  if (request.all_reduce_bucket_mib < 0 || !std::isfinite(request.all_reduce_bucket_mib)) {
    throw Error(ErrorKind::kInvalidConfig, "--all-reduce-bucket-mib must be >= 0");
  }
  if (request.all_reduce_bucket_mib > 0 && !lower.topology) {
    throw Error(ErrorKind::kInvalidConfig, "--all-reduce-bucket-mib applies to a run on a slice (--topology)");
  }
  lower.all_reduce_bucket_bytes = static_cast<uint64_t>(std::ceil(request.all_reduce_bucket_mib * 1024 * 1024));
  if (lower.topology && built.mode == kHloMode) {
    throw Error(ErrorKind::kUnsupported,
                "--topology replicates an ONNX model; an HLO module runs as written on one chip");
  }
  Compiled compiled = compileGraph(built.graph, hw, lower, options);
  if (!isHloPath(request.model_path)) compiled.program.set_precision(request.precision);
  compiled.program.set_loss(built.loss);
  if (timings) {
    timings->push_back({"import_and_training_graph", built_in.count()});
    timings->insert(timings->end(), compiled.timings.begin(), compiled.timings.end());
  }
  return std::move(compiled.program);
}

namespace {

// An HLO module runs as written: no loss or autodiff is added, and its shapes are fixed.
ModelGraph buildHloGraph(const RunRequest& request) {
  const std::string mode = request.mode.value_or(kHloMode);
  if (mode != kHloMode) {
    throw Error(ErrorKind::kInvalidConfig,
                request.model_path + " is an HLO module, which runs as written (mode " + kHloMode +
                    "): it is already the compiled step (a JAX training step holds its backward pass and update), "
                    "so --mode " +
                    mode + " does not apply; leave --mode out");
  }
  if (request.precision != "float32") {
    throw Error(ErrorKind::kInvalidConfig,
                "--precision does not apply to an HLO module: it runs in the dtypes "
                "it was written with (export it under the policy instead)");
  }
  if (request.batch) {
    throw Error(ErrorKind::kInvalidConfig,
                "--batch does not apply to an HLO module: its shapes are fixed (re-export it for another batch)");
  }
  ModelGraph built;
  built.mode = mode;
  built.model = importHloFile(request.model_path);
  built.graph = built.model.graph;
  return built;
}

// Integer feeds arrive as int64 (Python's integers): one for an input of another
// integer dtype (an HLO s32 parameter, say) takes that dtype if every value fits.
void adoptIntegerDtype(const ir::Tensor& tensor, std::map<std::string, ir::TensorValue>& feeds) {
  auto feed = feeds.find(tensor.name);
  if (feed == feeds.end() || feed->second.dtype == tensor.dtype) return;
  if (ir::TensorValue::isFloating(tensor.dtype) || ir::TensorValue::isFloating(feed->second.dtype) ||
      tensor.dtype == DType::kBool) {
    return;  // the executor reports the mismatch
  }
  const int bits = static_cast<int>(dtypeBytes(tensor.dtype)) * 8;
  const bool is_unsigned =
      tensor.dtype == DType::kUInt8 || tensor.dtype == DType::kUInt32 || tensor.dtype == DType::kUInt64;
  for (int64_t v : feed->second.ints) {
    const bool fits = is_unsigned ? v >= 0 && (bits >= 64 || v < (int64_t{1} << bits))
                                  : bits >= 64 || (v >= -(int64_t{1} << (bits - 1)) && v < (int64_t{1} << (bits - 1)));
    if (!fits) {
      throw Error(ErrorKind::kInvalidInput,
                  "value " + std::to_string(v) + " for '" + tensor.name + "' does not fit " + dtypeName(tensor.dtype));
    }
  }
  feed->second.dtype = tensor.dtype;
}

}  // namespace

ModelGraph buildModelGraph(const RunRequest& request) {
  checkOptionRules(request);
  if (!std::filesystem::exists(request.model_path)) {
    throw Error(ErrorKind::kInvalidInput, "model file '" + request.model_path + "' does not exist");
  }
  if (isProgramPath(request.model_path)) {
    throw Error(ErrorKind::kInvalidConfig, request.model_path + " is a compiled Program; this needs the model");
  }
  if (isHloPath(request.model_path)) return buildHloGraph(request);
  const PrecisionPolicy precision = parsePrecisionPolicy(request.precision);
  const std::string mode = request.mode.value_or("training");
  if (mode != "training" && mode != "inference") {
    throw Error(ErrorKind::kInvalidConfig, "unknown mode '" + mode + "' (use training or inference)");
  }
  checkPolicyForMode(precision, mode);
  ModelGraph built;
  built.mode = mode;
  OnnxImportOptions options;
  options.batch = request.batch;
  options.training = mode == "training";
  built.model = importOnnxFile(request.model_path, options);
  if (!request.batch) spdlog::info("batch size {} (set it with --batch)", built.model.batch);
  applyPrecisionPolicy(built.model, precision);
  if (mode == "inference") {
    built.graph = buildInferenceGraph(built.model);
    return built;
  }
  const TrainingOptions training = trainingOptionsOf(request);
  validateTrainingOptions(training);
  if (training.micro_batches > 1) {
    // The model is replayed once per micro-batch: import it at the micro-batch size.
    const int64_t batch = built.model.batch;
    if (batch % training.micro_batches != 0) {
      throw Error(ErrorKind::kInvalidConfig, "batch " + std::to_string(batch) + " does not divide into " +
                                                 std::to_string(training.micro_batches) + " micro-batches");
    }
    options.batch = batch / training.micro_batches;
    try {
      built.model = importOnnxFile(request.model_path, options);
    } catch (const Error& error) {
      if (error.kind() != ErrorKind::kInvalidConfig) throw;
      throw Error(ErrorKind::kInvalidConfig, std::string(error.what()) +
                                                 " (micro-batches need a symbolic batch "
                                                 "dimension)");
    }
    applyPrecisionPolicy(built.model, precision);
  }
  built.loss = chooseLoss(built.model, training.loss).description;
  built.graph = buildTrainingGraph(built.model, training);
  if (training.micro_batches > 1) built.model.batch *= training.micro_batches;  // the step's batch
  return built;
}

TrainingOptions trainingOptionsOf(const RunRequest& request) {
  TrainingOptions options;
  options.learning_rate = request.learning_rate;
  options.loss = parseLoss(request.loss);
  ir::OptimizerConfig& c = options.optimizer;
  c.kind = parseOptimizer(request.optimizer);
  c.warmup_steps = request.warmup_steps;
  c.beta1 = c.kind == ir::OptimizerKind::kAdam ? request.beta1 : request.momentum;
  c.beta2 = request.beta2;
  c.epsilon = request.epsilon;
  c.weight_decay = request.weight_decay;
  c.decoupled_weight_decay = request.adamw;
  c.nesterov = request.nesterov;
  options.micro_batches = request.micro_batches;
  options.rematerialize = parseRemat(request.remat);
  options.loss_scaling = needsLossScaling(parsePrecisionPolicy(request.precision));
  return options;
}

std::map<std::string, ir::TensorValue> completeFeeds(const ModelGraph& built,
                                                     std::map<std::string, ir::TensorValue> feeds) {
  for (const auto& [name, value] : built.model.initializers) feeds.emplace(name, value);  // keeps given values
  // A floating feed of another floating dtype (numpy's float64 for an f32 input) is
  // rounded to the tensor's dtype, once.
  for (const ir::Tensor& tensor : built.graph.tensors()) {
    auto feed = feeds.find(tensor.name);
    if (feed == feeds.end() || built.graph.producer(tensor.id) != nullptr) continue;
    ir::TensorValue& value = feed->second;
    if (value.dtype != tensor.dtype && isFloatingDType(value.dtype) && isFloatingDType(tensor.dtype)) {
      value.dtype = tensor.dtype;
      numerics::roundInPlace(tensor.dtype, std::span<double>(value.floats));
    }
  }
  // Optimizer state starts at zero (step 0), the loss scale at Keras's initial scale.
  for (const ir::Tensor& tensor : built.graph.tensors()) {
    if (tensor.role != ir::TensorRole::kOptimizerState || built.graph.producer(tensor.id) != nullptr) continue;
    ir::TensorValue value = ir::TensorValue::zeros(tensor.shape, tensor.dtype);
    if (tensor.name == kLossScaleTensor) value.floats.assign(1, kInitialLossScale);
    feeds.emplace(tensor.name, std::move(value));
  }
  for (const ir::Tensor& tensor : built.graph.tensors()) adoptIntegerDtype(tensor, feeds);
  return feeds;
}

std::map<std::string, ir::TensorValue> runReference(const RunRequest& request,
                                                    std::map<std::string, ir::TensorValue> feeds, int threads,
                                                    std::optional<reference::MxuNumericsOptions> mxu,
                                                    const std::optional<std::vector<std::string>>& tensors) {
  const ModelGraph built = buildModelGraph(request);
  std::vector<int> ids;
  if (tensors) {
    std::map<std::string, int> by_name;
    for (const ir::Tensor& tensor : built.graph.tensors()) by_name.emplace(tensor.name, tensor.id);
    for (const std::string& name : *tensors) {
      const auto found = by_name.find(name);
      if (found == by_name.end()) {
        throw Error(ErrorKind::kInvalidInput, "the step has no tensor named '" + name +
                                                  "' (reference() without tensors= returns every tensor by name)");
      }
      ids.push_back(found->second);
    }
  } else {
    for (const ir::Tensor& tensor : built.graph.tensors()) ids.push_back(tensor.id);
  }
  const std::vector<ir::TensorValue> values =
      reference::CpuExecutor(built.graph, reference::CpuOptions{threads, mxu}, ids)
          .run(completeFeeds(built, std::move(feeds)));
  std::map<std::string, ir::TensorValue> named;
  for (int id : ids) named[built.graph.tensor(id).name] = values[static_cast<size_t>(id)];
  return named;
}

RunOutcome runRequest(const RunRequest& request) {
  reference::checkCpuThreads(request.threads);  // before minutes of simulation, functional or not
  checkHostSteps(request.steps);
  checkOptionRules(request);
  if (!request.precision_rule.empty()) return runPrecisionRule(request);
  if (!request.precision_schedule.empty()) return runPrecisionSchedule(request);
  const Strategy strategy = strategyFromName(request.strategy);
  const HardwareParams hw = resolveHardware(request);
  if (request.pipeline_parallel != 1) return runPipeline(request, hw);
  RunOutcome outcome;
  outcome.program = compileRequest(request, hw);
  const SimResult result = simulate(outcome.program, hw, request.progress);
  outcome.report = buildReport(outcome.program, result, hw,
                               RunInfo{outcome.program.model(), request.overrides, request.instruction_timeline});
  if (request.steps > 0) {
    outcome.report["host"] = runHostSteps(hw, outcome.report, request.steps, *result.stats);
    addHostInputStall(outcome.report["step_breakdown"],
                      outcome.report["host"]["input_stall_cycles"].get<uint64_t>() / request.steps);
    outcome.report["stats"] = statsEntries(*result.stats);  // with the host's
  }
  if (strategy != Strategy::kNone && strategy != Strategy::kParameterServer) {
    outcome.report["strategy"] = strategyEntry(strategy, outcome.program);
  }
  if (strategy == Strategy::kParameterServer) {
    const ModelGraph built = buildModelGraph(request);
    outcome.report["ps"] = runPsSteps(hw, built.graph, outcome.report, request.workers.value_or(kDefaultPsWorkers),
                                      request.steps > 0 ? request.steps : kDefaultPsSteps);
  }
  if (request.functional) {
    FunctionalRun values = runFunctional(request, hw);
    outcome.report["functional"] = std::move(values.summary);
    outcome.functional_inputs = std::move(values.inputs);
    outcome.functional_outputs = std::move(values.outputs);
  }
  return outcome;
}

}  // namespace tpusim
