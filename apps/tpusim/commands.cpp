#include "apps/tpusim/commands.hpp"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>

#include <boost/program_options.hpp>

#include "api/functional.hpp"
#include "api/npy.hpp"
#include "api/session.hpp"
#include "frontend/program_io.hpp"
#include "report/report.hpp"
#include "sim/common/error.hpp"
#include "sim/common/log.hpp"
#include "sim/common/params.hpp"

namespace tpusim::cli {

namespace po = boost::program_options;

namespace {

constexpr int64_t kBatchUnset = std::numeric_limits<int64_t>::min();

struct ModelOptions {
  std::string model;
  std::string hw = "tpuv4";
  std::string mode;
  int64_t batch = kBatchUnset;
  std::vector<std::string> sets;
  std::string log_level = "warn";
  std::string topology;
  RunRequest training;  // the training fields only
};

po::options_description modelOptions(ModelOptions& o) {
  po::options_description desc("options");
  desc.add_options()("help,h", "show this help")("hw", po::value(&o.hw)->default_value(o.hw),
                                                 "hardware preset (tpusim hw list) or .textproto file")(
      "mode", po::value(&o.mode), "training (default) or inference; an HLO module runs as-written")(
      "batch", po::value(&o.batch), "batch size for a symbolic batch dimension (default 32); per chip with --topology")(
      "topology", po::value(&o.topology),
      "data parallel over an ICI slice of this shape (4x4x4, of the preset's ici.topology): one replica per chip, "
      "gradients all-reduced (docs/interconnect.md)")(
      "set", po::value(&o.sets)->composing(), "override a parameter: --set key=value (repeatable)")(
      "log-level", po::value(&o.log_level)->default_value(o.log_level),
      "trace, debug, info, warn, error, critical or off")(
      "print-ir-after", po::value(&o.training.print_ir_after)->composing(),
      "print the IR to stderr after a compiler pass (repeatable; a pass name or all)")(
      "matmul-precision", po::value(&o.training.matmul_precision)->default_value(o.training.matmul_precision),
      "f32 matmuls on the MXU: default (1 bf16 pass), high (3) or highest (6), as XLA (docs/mxu.md)")(
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
      "gradient accumulation over K slices of the batch (K divides it)")(
      "remat", po::value(&t.remat)->default_value(t.remat),
      "activation rematerialization: none, or all (recompute forward activations in backward)");
  desc.add(train);
  return desc;
}

// Parses `args`; returns false (after printing help) when --help was asked for.
bool parse(const std::vector<std::string>& args, po::options_description& desc, const std::string& usage,
           bool wants_model, std::string* model) {
  po::options_description all;
  all.add(desc);
  std::string positional_model;
  if (wants_model) all.add_options()("model", po::value(&positional_model), "model");
  po::positional_options_description positional;
  if (wants_model) positional.add("model", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
  if (vm.count("help")) {
    std::cout << usage << "\n" << desc;
    return false;
  }
  po::notify(vm);
  if (wants_model) {
    if (positional_model.empty()) throw Error(ErrorKind::kInvalidConfig, "missing MODEL argument (" + usage + ")");
    *model = positional_model;
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

void printParams(const HardwareParams* hw) {
  std::printf("%-34s %-18s %-12s %s\n", "parameter", hw ? "value" : "default", "unit", "description");
  for (const ParamInfo& param : HardwareParams::declarations()) {
    const std::string value = hw ? hw->valueText(param) : param.default_text;
    std::printf("%-34s %-18s %-12s %s\n", param.name.c_str(), value.c_str(), param.unit.c_str(), param.doc.c_str());
  }
}

}  // namespace

int runCommand(const std::vector<std::string>& args) {
  ModelOptions o;
  std::string out_dir = "tpusim-out";
  po::options_description desc = modelOptions(o);
  bool no_instructions = false;
  bool functional = false;
  uint64_t seed = 0;
  uint64_t steps = 0;
  desc.add_options()("out", po::value(&out_dir)->default_value(out_dir), "directory for report.json")(
      "functional", po::bool_switch(&functional),
      "also compute the step's values with the MXU's numerics; inputs and outputs go to DIR/functional/*.npy")(
      "seed", po::value(&seed)->default_value(seed), "seed of the functional run's generated inputs")(
      "steps", po::value(&steps)->default_value(steps),
      "run N steps fed by the host input pipeline and PCIe (host.*, docs/host.md); 0: one step, inputs in HBM")(
      "no-instructions", po::bool_switch(&no_instructions),
      "leave the per-instruction list out of report.json (per-op and per-layer figures stay)");
  if (!parse(args, desc, "usage: tpusim run MODEL [options]", true, &o.model)) return 0;
  setLogLevel(o.log_level);
  RunRequest request = toRequest(o);
  request.instruction_timeline = !no_instructions;
  request.functional = functional;
  request.seed = seed;
  request.steps = steps;
  const RunOutcome outcome = runRequest(request);
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw Error(ErrorKind::kInvalidConfig, "cannot create output directory '" + out_dir + "': " + ec.message());
  const std::string report_path = (std::filesystem::path(out_dir) / "report.json").string();
  writeReport(outcome.report, report_path);
  std::cout << summarizeReport(outcome.report);
  if (functional) {
    std::filesystem::create_directories(std::filesystem::path(out_dir) / "functional", ec);
    for (const NamedValues* values : {&outcome.functional_inputs, &outcome.functional_outputs}) {
      for (const auto& [name, value] : *values) {
        writeNpy(value, (std::filesystem::path(out_dir) / functionalFileName(name)).string());
      }
    }
    std::cout << "functional   " << outcome.functional_outputs.size() << " outputs and "
              << outcome.functional_inputs.size() << " generated inputs in "
              << (std::filesystem::path(out_dir) / "functional").string() << "\n";
  }
  std::cout << "report       " << report_path << "\n";
  return 0;
}

int compileCommand(const std::vector<std::string>& args) {
  ModelOptions o;
  std::string output;
  po::options_description desc = modelOptions(o);
  desc.add_options()("output,o", po::value(&output), "Program file to write (.tpuprog binary, .tpuprog.txt text)");
  if (!parse(args, desc, "usage: tpusim compile MODEL -o FILE [options]", true, &o.model)) return 0;
  setLogLevel(o.log_level);
  if (output.empty()) throw Error(ErrorKind::kInvalidConfig, "compile needs -o FILE");
  if (!isProgramPath(output))
    throw Error(ErrorKind::kInvalidConfig,
                "-o must end in .tpuprog or .program.pb (binary), .tpuprog.txt or .pbtxt (text)");
  const RunRequest request = toRequest(o);
  const HardwareParams hw = resolveHardware(request);
  std::vector<PassTiming> timings;
  const program::Program program = compileRequest(request, hw, &timings);
  writeProgram(program, output);
  std::cout << "wrote " << output << " (" << program.chips(0).instructions_size() << " instructions for " << hw.name()
            << ")\n";
  if (!timings.empty()) {
    double total = 0;
    for (const PassTiming& timing : timings) total += timing.seconds;
    std::printf("%-28s %10s %7s\n", "compile stage", "ms", "share");
    for (const PassTiming& timing : timings) {
      std::printf("%-28s %10.2f %6.1f%%\n", timing.name.c_str(), timing.seconds * 1e3,
                  total > 0 ? 100.0 * timing.seconds / total : 0.0);
    }
    std::printf("%-28s %10.2f\n", "total", total * 1e3);
  }
  return 0;
}

int hwCommand(const std::vector<std::string>& args) {
  const std::string usage = "usage: tpusim hw list | hw show PRESET [--set key=value] | hw params";
  if (args.empty()) throw Error(ErrorKind::kInvalidConfig, "missing hw subcommand (" + usage + ")");
  if (args[0] == "list") {
    for (const std::string& name : HardwareParams::presetNames()) {
      const HardwareParams hw = HardwareParams::load(name);
      std::printf("%-10s %s\n", name.c_str(), hw.config().description().c_str());
    }
    return 0;
  }
  if (args[0] == "params") {
    printParams(nullptr);
    return 0;
  }
  if (args[0] == "show") {
    std::vector<std::string> sets;
    std::string preset;
    po::options_description desc("options");
    desc.add_options()("help,h", "show this help")("set", po::value(&sets)->composing(),
                                                   "override a parameter: --set key=value (repeatable)");
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (!parse(rest, desc, usage, true, &preset)) return 0;
    HardwareParams hw = HardwareParams::load(preset);
    for (const std::string& set : sets) {
      const auto [key, value] = parseOverride(set);
      hw.set(key, value);
    }
    std::printf("%s: %s\n\n", hw.name().c_str(), hw.config().description().c_str());
    printParams(&hw);
    return 0;
  }
  throw Error(ErrorKind::kInvalidConfig, "unknown hw subcommand '" + args[0] + "' (" + usage + ")");
}

}  // namespace tpusim::cli
