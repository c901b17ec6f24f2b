#include "api/reference_run.hpp"

#include <filesystem>
#include <optional>
#include <thread>

#include "api/functional.hpp"
#include "reference/cpu/cpu_executor.hpp"
#include "reference/cuda/cuda_device.hpp"
#include "reference/cuda/cuda_executor.hpp"
#include "sim/common/error.hpp"

namespace tpusim {

namespace {

// Every tensor at its dtype's size: both executors hold each value to the end of the step.
uint64_t tensorBytes(const ir::Graph& graph) {
  uint64_t bytes = 0;
  for (const ir::Tensor& tensor : graph.tensors()) {
    bytes += static_cast<uint64_t>(ir::elementCount(tensor.shape)) * dtypeBytes(tensor.dtype);
  }
  return bytes;
}

nlohmann::ordered_json describe(const std::string& name, const std::string& op, const ir::TensorValue& value) {
  nlohmann::ordered_json entry;
  entry["name"] = name;
  entry["op"] = op;
  entry["shape"] = value.shape;
  entry["dtype"] = dtypeName(value.dtype);
  entry["file"] = valueFileName("reference", name);
  return entry;
}

}  // namespace

ReferenceOutcome runReferenceBackend(const ReferenceRequest& request) {
  if (request.backend != "cpu" && request.backend != "cuda") {
    throw Error(ErrorKind::kInvalidConfig, "unknown backend '" + request.backend + "' (choose cpu or cuda)");
  }
  if (request.numerics != "reference" && request.numerics != "mxu") {
    throw Error(ErrorKind::kInvalidConfig, "unknown numerics '" + request.numerics + "' (choose reference or mxu)");
  }
  reference::checkTimingOptions(request.timing);
  const bool cuda = request.backend == "cuda";
  if (cuda && request.numerics == "mxu") {
    throw Error(ErrorKind::kUnsupported,
                "--numerics mxu runs on the CPU backend only (the CUDA executor computes as cuBLAS and cuDNN do)");
  }
  std::optional<reference::CudaDevice> device;
  if (cuda) device = reference::firstCudaDevice();  // throws without a device or without CUDA
  const HardwareParams hw = resolveHardware(request.run);
  const ModelGraph built = buildModelGraph(request.run);
  if (built.model.shape_only_weights) {
    throw Error(ErrorKind::kUnsupported, "the reference run needs the model's weight values, and " +
                                             request.run.model_path + " stores shapes only (export it with weights)");
  }
  ReferenceOutcome outcome;
  outcome.inputs = generatedInputs(built, request.run.seed);
  reference::CpuOptions options{request.threads, std::nullopt};
  if (request.numerics == "mxu") options.mxu = mxuNumericsOf(hw, request.run);
  const std::map<std::string, ir::TensorValue> feeds =
      completeFeeds(built, {outcome.inputs.begin(), outcome.inputs.end()});
  const reference::TimedRun timed = cuda ? reference::CudaExecutor(built.graph).runTimed(feeds, request.timing)
                                         : reference::CpuExecutor(built.graph, options).runTimed(feeds, request.timing);

  nlohmann::ordered_json& r = outcome.report;
  r["schema_version"] = 1;
  r["kind"] = kReferenceReportKind;
  r["backend"] = request.backend;
  r["device"] = cuda ? device->name + " (sm_" + std::to_string(device->compute_capability) + ", " +
                           std::to_string(device->memory_bytes >> 30) + " GiB)"
                     : "host CPU, " + std::to_string(request.threads) + " thread(s) of " +
                           std::to_string(std::thread::hardware_concurrency());
  r["model"] = std::filesystem::path(request.run.model_path).filename().string();
  r["hw"] = hw.name();
  r["mode"] = built.mode;
  r["batch"] = built.model.batch;
  r["numerics"] = request.numerics;
  if (options.mxu) r["matmul_precision"] = request.run.matmul_precision;
  r["seed"] = request.run.seed;
  r["timing"] = {{"method", cuda ? "CUDA events around each op on one stream; warm-up runs, then the median of "
                                   "the repeats"
                                 : "wall clock (steady_clock) per op; warm-up runs, then the median of the repeats"},
                 {"warmup", request.timing.warmup},
                 {"repeats", request.timing.repeats}};
  double step = 0;
  nlohmann::ordered_json per_op = nlohmann::ordered_json::array();
  for (size_t i = 0; i < built.graph.ops().size(); ++i) {
    const ir::Op& op = built.graph.ops()[i];
    nlohmann::ordered_json entry;
    entry["op"] = op.name;
    entry["type"] = ir::opTypeName(op.type);
    entry["time_s"] = timed.op_seconds[i];
    step += timed.op_seconds[i];
    per_op.push_back(entry);
  }
  r["step_time_s"] = step;  // the sum of the per-op medians: the executor runs one op at a time
  // CUDA: measured (the device memory in use, above what the process held before); CPU: every
  // tensor at its dtype's size (the executor holds each value to the end of the step).
  r["peak_memory_bytes"] = cuda ? timed.device_peak_bytes : tensorBytes(built.graph);
  r["peak_memory_method"] = cuda ? "measured: device memory in use after each op (cudaMemGetInfo), above the "
                                   "baseline before the step"
                                 : "every tensor at its dtype's size, all held to the end of the step";
  r["per_op"] = per_op;
  r["inputs"] = nlohmann::ordered_json::array();
  for (const auto& [name, value] : outcome.inputs) r["inputs"].push_back(describe(name, "", value));
  r["outputs"] = nlohmann::ordered_json::array();
  for (int id : stepOutputIds(built.graph)) {
    const ir::Tensor& tensor = built.graph.tensor(id);
    const ir::Op* producer = built.graph.producer(id);
    const ir::TensorValue& value = timed.values[static_cast<size_t>(id)];
    outcome.outputs.emplace_back(tensor.name, value);
    r["outputs"].push_back(describe(tensor.name, producer ? producer->name : "", value));
  }
  return outcome;
}

}  // namespace tpusim
