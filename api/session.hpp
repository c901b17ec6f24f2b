// The library API shared by the CLI and the Python module: compile a model
// (or load a saved Program) for a preset, simulate one step, build the report.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "frontend/import/onnx_import.hpp"
#include "frontend/ir/graph.hpp"
#include "frontend/passes/pass_manager.hpp"
#include "reference/cpu/mxu_gemm.hpp"
#include "sim/chip/driver.hpp"
#include "sim/common/params.hpp"
#include "sim/interconnect/topology.hpp"
#include "traces/program.pb.h"

namespace tpusim {

struct RunRequest {
  std::string model_path;           // .onnx model, .hlo / .hlo.txt module, or a saved Program (.tpuprog, .tpuprog.txt)
  std::string hw = "tpuv4";         // preset name or .textproto path
  std::optional<std::string> mode;  // "training" (default for ONNX) or "inference"; HLO: "as-written"
  std::optional<int64_t> batch;     // for models with a symbolic batch dimension; per replica with a topology
  // Data parallel over an ICI slice of this shape ("4x4x4", of the preset's ici.topology kind):
  // one replica per chip, each with `batch` examples (global batch = batch x chips). Empty: one chip.
  std::string topology;
  // With a topology: consecutive gradient all-reduces share one collective of up to this many
  // MiB (0: one per gradient).
  double all_reduce_bucket_mib = 0;
  // Parallelism degrees over the slice (api/parallel_degrees.hpp, docs/strategies.md):
  // data (0: whatever the others leave), tensor (Megatron matmul pairs over consecutive
  // chips) and pipeline (contiguous stages of layers). Their product is the chip count.
  int64_t data_parallel = 0;
  int64_t tensor_parallel = 1;
  int64_t pipeline_parallel = 1;
  // With pipeline_parallel > 1 (api/pipeline_run.hpp): "gpipe" or "1f1b", over
  // micro_batches micro-batches of batch / micro_batches examples (then no accumulation).
  std::string pipeline_schedule = "1f1b";
  ParamOverrides overrides;  // --set key=value, in order
  // Training (docs/frontend.md): the loss, the optimizer and its hyperparameters, warmup,
  // gradient accumulation and rematerialization. Checked by buildTrainingGraph.
  double learning_rate = 0.01;
  std::string loss = "auto";          // auto, softmax_cross_entropy or mse
  std::string optimizer = "sgd";      // sgd, momentum, adam, adagrad or lars
  int64_t warmup_steps = 0;           // linear warmup of the learning rate over this many steps
  double momentum = 0.9;              // momentum, LARS
  bool nesterov = false;              // momentum
  double beta1 = 0.9;                 // Adam
  double beta2 = 0.999;               // Adam
  double epsilon = 1e-8;              // Adam, Adagrad
  double weight_decay = 0;            // L2 (AdamW: decoupled)
  bool adamw = false;                 // Adam: decoupled weight decay
  int64_t micro_batches = 1;          // gradient accumulation over this many slices of the batch (--pp: the pipeline's)
  std::string remat = "none";         // none or all
  std::string precision = "float32";  // Keras policy: float32, mixed_bfloat16, mixed_float16 or int8 (inference;
                                      // frontend/train/precision_policy.hpp)
  // Adaptive precision by schedule, "POLICY:STEPS,..." (api/precision_schedule.hpp); empty: none.
  std::string precision_schedule;
  // Adaptive precision by rule, "FROM->TO when STATISTIC>NUMBER [for N]" over
  // precision_rule_steps real training steps (api/precision_rule.hpp); empty: none.
  std::string precision_rule;
  uint64_t precision_rule_steps = 10;
  // Compiler: print the IR after these passes (names from compilerPassNames(), or "all") to stderr.
  std::vector<std::string> print_ir_after;
  std::string matmul_precision = "default";  // f32 matmuls: default, high or highest (1, 3, 6 bf16 passes)
  std::string tiling_objective = "cycles";   // GEMM tiles by estimated cycles, or by HBM bytes
  // Report: list every executed instruction in report.json's "ops" (large for big models).
  bool instruction_timeline = true;
  // Compute the step's values too, with the MXU's numerics (api/functional.hpp).
  bool functional = false;
  uint64_t seed = 0;  // of the functional run's generated inputs
  // CPU threads of the functional run and of the CPU reference backend: they split
  // each op's output and do not change its bits (1 to reference::kMaxCpuThreads).
  int threads = 1;
  // Run this many steps fed by the host's input pipeline and PCIe infeed (api/host_run.hpp);
  // 0: one step with its inputs already in HBM.
  uint64_t steps = 0;
  // Distribution strategy (api/strategy.hpp): empty (one chip, or --topology), "mirrored",
  // "multi_worker_mirrored" (over `workers` hosts), "tpu" (--topology) or "ps"
  // (ParameterServerStrategy over `workers` workers, 32 unless given; --steps, default 10).
  std::string strategy;
  std::optional<uint64_t> workers;
  // Hears how far each simulation is (api/progress.hpp prints it); empty: nothing.
  ProgressCallback progress;
};

// The training options a request asks for (names parsed, values not yet checked).
struct TrainingOptions;
TrainingOptions trainingOptionsOf(const RunRequest& request);

// The preset with the request's overrides applied and validated.
HardwareParams resolveHardware(const RunRequest& request);

// The ICI slice of --topology (the preset's ici.topology kind), or of the strategy's
// hosts (api/strategy.hpp), or none. A shape that does not parse or fit the kind, or
// options that do not fit the strategy, are one-line errors.
std::optional<Topology> sliceOf(const RunRequest& request, const HardwareParams& hw);

// The Program the request describes: an ONNX model compiled for `hw`, or a saved Program.
// `timings`, when given, receives the wall time of each compiler stage (import and the
// training graph first, then each pass: frontend/compile.hpp).
program::Program compileRequest(const RunRequest& request, const HardwareParams& hw,
                                std::vector<PassTiming>* timings = nullptr);

// Tensors of a functional run (api/functional.hpp), in graph order.
using NamedValues = std::vector<std::pair<std::string, ir::TensorValue>>;

struct RunOutcome {
  program::Program program;
  nlohmann::ordered_json report;
  NamedValues functional_inputs;   // --functional: the generated inputs and labels
  NamedValues functional_outputs;  // --functional: the graph's outputs
};

RunOutcome runRequest(const RunRequest& request);

// The IR graph a model request describes (training or inference), with the
// model's weight values; saved Programs have no graph.
struct ModelGraph {
  ImportedModel model;
  ir::Graph graph;
  std::string mode;  // training, inference, or as-written (an HLO module)
  std::string loss;  // training: what chooseLoss says of the loss
};

// The mode an HLO module runs in: it is already the compiled step (a JAX training
// step holds its own backward pass and update), so it runs as it is written.
inline constexpr const char* kHloMode = "as-written";
ModelGraph buildModelGraph(const RunRequest& request);

// The complete feeds of `built`'s graph: `feeds` (inputs, labels, perhaps weights),
// the model's initializers for the weights not given, zero optimizer state (step 0),
// floating values rounded to their tensor's dtype and integer ones given its dtype.
std::map<std::string, ir::TensorValue> completeFeeds(const ModelGraph& built,
                                                     std::map<std::string, ir::TensorValue> feeds);

// Runs the request's graph on the CPU reference executor. `feeds` gives
// inputs and labels by name and may replace weights; weights default to the
// model's initializers. Returns every tensor's value, by tensor name, or with
// `tensors` only those (the executor releases the others as it goes; a name the
// step lacks is an invalid-input Error). With `mxu`, matmuls and convolutions are
// computed with the MXU's numerics (reference/cpu/mxu_gemm.hpp) instead of the
// reference kernels'.
std::map<std::string, ir::TensorValue> runReference(
    const RunRequest& request, std::map<std::string, ir::TensorValue> feeds, int threads,
    std::optional<reference::MxuNumericsOptions> mxu = std::nullopt,
    const std::optional<std::vector<std::string>>& tensors = std::nullopt);

}  // namespace tpusim
