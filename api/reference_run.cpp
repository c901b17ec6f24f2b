#include "api/reference_run.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <thread>

#include "api/functional.hpp"
#include "frontend/passes/data_parallel.hpp"
#include "reference/cpu/cpu_executor.hpp"
#include "reference/cuda/cuda_device.hpp"
#include "reference/cuda/cuda_executor.hpp"
#include "sim/common/error.hpp"

namespace tpusim {

namespace {

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
  const RunRequest& run = request.run;
  if (!run.topology.empty() || run.data_parallel > 1 || run.tensor_parallel != 1 || run.pipeline_parallel != 1) {
    throw Error(ErrorKind::kUnsupported,
                "tpusim reference runs on this machine's devices: --topology, --dp, --tp and --pp describe the "
                "simulated slice; use --replicas N for data parallel over N replicas");
  }
  if (request.replicas < 1) throw Error(ErrorKind::kInvalidConfig, "--replicas must be at least 1");
  const HardwareParams hw = resolveHardware(run);
  const ModelGraph built = buildModelGraph(run);
  // Data parallel: each replica's gradients summed across the replicas before the optimizer
  // reads them, the simulator's data-parallel graph (frontend/passes/data_parallel.hpp).
  const ir::Graph graph = allReduceGradients(built.graph, request.replicas);
  // The model's ops first, then the device: what the CUDA executor cannot run is said on any machine.
  // Only the step's outputs are read after it: the CPU executor holds each other value only until
  // its last reader, and the CUDA executor copies back only these.
  const std::vector<int> outputs = stepOutputIds(graph);
  std::optional<reference::CudaExecutor> cuda_executor;
  if (cuda) cuda_executor.emplace(graph, request.replicas, outputs);
  std::optional<reference::CudaDevice> device;
  if (cuda) device = reference::firstCudaDevice();  // throws without a device or without CUDA
  ReferenceOutcome outcome;
  outcome.inputs = generatedInputs(built, run.seed);
  reference::CpuOptions options{request.run.threads, std::nullopt};
  if (request.numerics == "mxu") options.mxu = mxuNumericsOf(hw, run);
  const std::vector<std::map<std::string, ir::TensorValue>> feeds = replicaFeeds(built, run.seed, request.replicas);
  std::vector<reference::TimedRun> runs;
  uint64_t cpu_held_peak_bytes = 0;
  if (cuda) {
    runs = cuda_executor->runReplicas(feeds, request.timing);
  } else {
    const reference::CpuExecutor executor(graph, options, outputs);
    runs = executor.runTimedReplicas(feeds, request.timing);
    cpu_held_peak_bytes = executor.heldPeakBytes();
  }
  // An op's time is its slowest replica's; the values are replica 0's, read where they are.
  const std::vector<ir::TensorValue>& values = runs.front().values;
  reference::TimedRun timed{{}, runs.front().op_seconds, runs.front().device_peak_bytes, runs.front().op_kernels};
  for (const reference::TimedRun& replica : runs) {
    for (size_t i = 0; i < timed.op_seconds.size(); ++i) {
      timed.op_seconds[i] = std::max(timed.op_seconds[i], replica.op_seconds[i]);
    }
    timed.device_peak_bytes = std::max(timed.device_peak_bytes, replica.device_peak_bytes);
  }

  nlohmann::ordered_json& r = outcome.report;
  r["schema_version"] = 1;
  r["kind"] = kReferenceReportKind;
  r["backend"] = request.backend;
  r["device"] = cuda ? device->name + " (sm_" + std::to_string(device->compute_capability) + ", " +
                           std::to_string(device->memory_bytes >> 30) + " GiB)"
                     : "host CPU, " + std::to_string(request.run.threads) + " thread(s) of " +
                           std::to_string(std::thread::hardware_concurrency());
  if (cuda) r["device_libraries"] = device->libraries;
  r["model"] = std::filesystem::path(request.run.model_path).filename().string();
  r["hw"] = hw.name();
  r["mode"] = built.mode;
  r["batch"] = built.model.batch;
  r["numerics"] = request.numerics;
  if (options.mxu) r["matmul_precision"] = request.run.matmul_precision;
  r["seed"] = request.run.seed;
  if (!built.model.weight_inits.empty()) r["generated_weights"] = generatedWeightsSummary(built, request.run.seed);
  r["timing"] = {{"method", cuda ? "CUDA events around each op on one stream; warm-up runs, then the median of "
                                   "the repeats"
                                 : "wall clock (steady_clock) per op; warm-up runs, then the median of the repeats"},
                 {"warmup", request.timing.warmup},
                 {"repeats", request.timing.repeats}};
  r["replicas"] = request.replicas;
  if (request.replicas > 1) {
    const std::string replicas = std::to_string(request.replicas);
    r["replicas_method"] =
        (cuda ? "data parallel on GPUs 0.." + std::to_string(request.replicas - 1) +
                    ": each replica's gradients summed across them with NCCL before the optimizer reads them"
              : "data parallel, " + replicas +
                    " replicas one after another on this CPU, in lockstep op by op: each gradient summed across "
                    "them in replica order (in float, rounded to its dtype once) before the optimizer reads it") +
        "; replica r's inputs are generated from seed + r; an op's time is its slowest replica's; the values are "
        "replica 0's";
    nlohmann::ordered_json steps = nlohmann::ordered_json::array();
    for (const reference::TimedRun& replica : runs) {
      double total = 0;
      for (double seconds : replica.op_seconds) total += seconds;
      steps.push_back(total);
    }
    r["replica_step_time_s"] = steps;
  }
  double step = 0;
  nlohmann::ordered_json per_op = nlohmann::ordered_json::array();
  for (size_t i = 0; i < graph.ops().size(); ++i) {
    const ir::Op& op = graph.ops()[i];
    nlohmann::ordered_json entry;
    entry["op"] = op.name;
    entry["type"] = ir::opTypeName(op.type);
    entry["time_s"] = timed.op_seconds[i];
    if (!timed.op_kernels.empty()) entry["kernel"] = timed.op_kernels[i];
    step += timed.op_seconds[i];
    per_op.push_back(entry);
  }
  r["step_time_s"] = step;  // the sum of the per-op medians: the executor runs one op at a time
  // CUDA: measured (the device memory in use, above what the process held before); CPU: the
  // executor's live set at its peak, from the graph (tensor_lifetimes.hpp).
  r["peak_memory_bytes"] = cuda ? timed.device_peak_bytes : cpu_held_peak_bytes;
  r["peak_memory_method"] =
      cuda ? "measured: device memory in use after each op (cudaMemGetInfo), above the baseline before the step"
           : "tensors at their dtype's size, per replica, each held from the op that makes it (or the step's start) "
             "to the last op that reads it, the step's outputs to its end: the most held at once";
  r["per_op"] = per_op;
  r["inputs"] = nlohmann::ordered_json::array();
  for (const auto& [name, value] : outcome.inputs) r["inputs"].push_back(describe(name, "", value));
  r["outputs"] = nlohmann::ordered_json::array();
  for (int id : outputs) {
    const ir::Tensor& tensor = graph.tensor(id);
    const ir::Op* producer = graph.producer(id);
    const ir::TensorValue& value = values[static_cast<size_t>(id)];
    outcome.outputs.emplace_back(tensor.name, value);
    r["outputs"].push_back(describe(tensor.name, producer ? producer->name : "", value));
  }
  return outcome;
}

}  // namespace tpusim
