#include "apps/tpusim/model_options.hpp"

#include <iostream>

#include "api/strategy.hpp"
#include "sim/common/error.hpp"
#include "sim/common/params.hpp"
#include "sim/ps/ps_config.hpp"

namespace tpusim::cli {

namespace po = boost::program_options;

po::options_description modelOptions(ModelOptions& o) {
  po::options_description desc("options");
  desc.add_options()("help,h", "show this help")("hw", po::value(&o.hw)->default_value(o.hw),
                                                 "hardware preset (tpusim hw list) or .textproto file")(
      "mode", po::value(&o.mode), "training (default) or inference; an HLO module runs as-written")(
      "batch", po::value(&o.batch), "batch size for a symbolic batch dimension (default 32); per chip with --topology")(
      "topology", po::value(&o.topology),
      "data parallel over an ICI slice of this shape (4x4x4, of the preset's ici.topology): one replica per chip, "
      "gradients all-reduced (docs/interconnect.md)")(
      "all-reduce-bucket-mib", po::value(&o.training.all_reduce_bucket_mib)->default_value(0),
      "with --topology: consecutive gradient all-reduces share one collective of up to this many MiB (0: one each)")(
      "dp", po::value(&o.training.data_parallel)->default_value(0, "chips / (tp x pp)"),
      "with --topology: data-parallel degree (docs/strategies.md)")(
      "tp", po::value(&o.training.tensor_parallel)->default_value(1),
      "with --topology: tensor-parallel degree, Megatron matmul pairs split over consecutive chips")(
      "pp", po::value(&o.training.pipeline_parallel)->default_value(1),
      "with --topology: pipeline-parallel degree, the layers cut into this many stages (docs/strategies.md)")(
      "pipeline-schedule", po::value(&o.training.pipeline_schedule)->default_value(o.training.pipeline_schedule),
      "with --pp: gpipe or 1f1b")(
      "set", po::value(&o.sets)->composing(), "override a parameter: --set key=value (repeatable)")(
      "log-level", po::value(&o.log_level)->default_value(o.log_level),
      "trace, debug, info, warn, error, critical or off")(
      "print-ir-after", po::value(&o.training.print_ir_after)->composing(),
      "print the IR to stderr after a compiler pass (repeatable; a pass name or all)")(
      "matmul-precision", po::value(&o.training.matmul_precision)->default_value(o.training.matmul_precision),
      "f32 matmuls on the MXU: default (1 bf16 pass), high (3) or highest (6), as XLA (docs/mxu.md)")(
      "precision", po::value(&o.training.precision)->default_value(o.training.precision),
      "Keras precision policy: float32, mixed_bfloat16 (bf16 compute, f32 variables and loss), mixed_float16 (f16 compute with dynamic loss scaling) or int8 (--mode inference: int8 matmuls and convolutions)")(
      "tiling-objective", po::value(&o.training.tiling_objective)->default_value(o.training.tiling_objective),
      "GEMM tiles with the fewest estimated cycles (cycles) or the fewest HBM bytes (bytes)");
  RunRequest& t = o.training;
  po::options_description train("training options (docs/frontend.md)");
  train.add_options()("loss", po::value(&t.loss)->default_value(t.loss), "auto, softmax_cross_entropy or mse")(
      "optimizer", po::value(&t.optimizer)->default_value(t.optimizer), "sgd, momentum, adam, adagrad or lars")(
      "lr", po::value(&t.learning_rate)->default_value(t.learning_rate, "0.01"), "learning rate (> 0)")(
      "warmup-steps", po::value(&t.warmup_steps)->default_value(t.warmup_steps),
      "linear learning-rate warmup: rate x min(1, (step + 1) / N); 0 for none")(
      "momentum", po::value(&t.momentum)->default_value(t.momentum, "0.9"), "momentum and LARS: in [0, 1)")(
      "nesterov", po::bool_switch(&t.nesterov), "momentum: Nesterov's form")(
      "beta1", po::value(&t.beta1)->default_value(t.beta1, "0.9"), "Adam: first-moment decay, in [0, 1)")(
      "beta2", po::value(&t.beta2)->default_value(t.beta2, "0.999"), "Adam: second-moment decay, in [0, 1)")(
      "epsilon", po::value(&t.epsilon)->default_value(t.epsilon, "1e-8"), "Adam, Adagrad: added to the root")(
      "weight-decay", po::value(&t.weight_decay)->default_value(t.weight_decay, "0"), "L2 weight decay (>= 0)")(
      "adamw", po::bool_switch(&t.adamw), "Adam: decoupled weight decay (AdamW)")(
      "micro-batches", po::value(&t.micro_batches)->default_value(t.micro_batches),
      "gradient accumulation over K slices of the batch (K divides it); with --pp the pipeline's micro-batches")(
      "remat", po::value(&t.remat)->default_value(t.remat),
      "activation rematerialization: none, or all (recompute forward activations in backward)");
  desc.add(train);
  return desc;
}

bool parsePositionals(const std::vector<std::string>& args, po::options_description& desc, const std::string& usage,
                      const std::string& positional_name, int max_positionals, std::vector<std::string>* positionals) {
  po::options_description all;
  all.add(desc);
  po::positional_options_description positional;
  if (max_positionals > 0) {
    all.add_options()(positional_name.c_str(), po::value(positionals)->composing(), positional_name.c_str());
    positional.add(positional_name.c_str(), max_positionals);
  }
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
  if (vm.count("help")) {
    std::cout << usage << "\n" << desc;
    return false;
  }
  po::notify(vm);
  return true;
}

bool parse(const std::vector<std::string>& args, po::options_description& desc, const std::string& usage,
           bool wants_model, std::string* model) {
  std::vector<std::string> positionals;
  if (!parsePositionals(args, desc, usage, "model", wants_model ? 1 : 0, &positionals)) return false;
  if (wants_model) {
    if (positionals.empty()) throw Error(ErrorKind::kInvalidConfig, "missing MODEL argument (" + usage + ")");
    *model = positionals.front();
  }
  return true;
}

RunRequest toRequest(const ModelOptions& o) {
  RunRequest request = o.training;
  request.model_path = o.model;
  request.hw = o.hw;
  request.topology = o.topology;
  if (!o.mode.empty()) request.mode = o.mode;
  if (o.batch != kBatchUnset) {
    if (o.batch <= 0) throw Error(ErrorKind::kInvalidConfig, "--batch must be > 0");
    request.batch = o.batch;
  }
  for (const std::string& set : o.sets) request.overrides.push_back(parseOverride(set));
  return request;
}

void addStrategyOptions(po::options_description& desc, StrategyOptions& s) {
  po::options_description strategy("distribution (docs/strategies.md)");
  strategy.add_options()("strategy", po::value(&s.strategy),
                         "mirrored (one host's chips), multi_worker_mirrored (--workers hosts over the DCN), tpu "
                         "(the --topology slice), or ps (ParameterServerStrategy for the embedding tables)")(
      "sharding", po::value(&s.sharding), "ps: round_robin, size_balanced or dynamic (default: ps.sharding)")(
      "ps-tasks", po::value(&s.ps_tasks), "ps: parameter-server tasks (default: ps.tasks)")(
      "workers", po::value(&s.workers),
      "multi_worker_mirrored: hosts; ps: workers, each computing the simulated step (default 32)");
  desc.add(strategy);
}

void applyStrategyOptions(const StrategyOptions& s, RunRequest& request) {
  if (s.workers != kBatchUnset) {
    if (s.workers <= 0) throw Error(ErrorKind::kInvalidConfig, "--workers must be > 0");
    request.workers = static_cast<uint64_t>(s.workers);
  }
  request.strategy = s.strategy;
  if (strategyFromName(s.strategy) != Strategy::kParameterServer) {
    if (!s.sharding.empty() || s.ps_tasks != kBatchUnset) {
      throw Error(ErrorKind::kInvalidConfig, "--sharding and --ps-tasks need --strategy ps");
    }
    return;
  }
  if (!s.sharding.empty()) {
    request.overrides.emplace_back("ps.sharding", ps::shardingPolicyName(ps::parseShardingPolicy(s.sharding)));
  }
  if (s.ps_tasks != kBatchUnset) {
    if (s.ps_tasks <= 0) throw Error(ErrorKind::kInvalidConfig, "--ps-tasks must be > 0");
    request.overrides.emplace_back("ps.tasks", std::to_string(s.ps_tasks));
  }
}

}  // namespace tpusim::cli
