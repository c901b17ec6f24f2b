#include "api/run_options.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "sim/common/error.hpp"

namespace tpusim {

namespace {

using T = RunOptionType;
using S = RunOptionScope;
using R = RunRequest;

// A table row: the required fields, then what only some options have.
struct Row {
  RunOption option;
  Row& flag(std::string text) { return option.flag = std::move(text), *this; }
  Row& unit(std::string text) { return option.unit = std::move(text), *this; }
  Row& choices(std::vector<std::string> values) { return option.choices = std::move(values), *this; }
  Row& positive() { return option.positive = true, *this; }
  Row& shown(std::string text) { return option.shown_default = std::move(text), *this; }
  operator RunOption() const { return option; }  // NOLINT: rows read as options
};

Row option(std::string name, std::string group, RunOptionScope scope, RunOptionField field, std::string doc) {
  return Row{RunOption{std::move(name), "", std::move(group), scope, field, std::move(doc), "", {}, false, ""}};
}

std::vector<RunOption> makeRunOptions() {
  return {
      // Training (docs/frontend.md): checked by buildTrainingGraph.
      option(
          "loss", "training", S::kModel, &R::loss,
          "the loss added to a model without its own; auto: softmax cross-entropy for a [batch, classes] output, else "
          "mean squared error")
          .choices({"auto", "softmax_cross_entropy", "mse"}),
      option("optimizer", "training", S::kModel, &R::optimizer, "the optimizer")
          .choices({"sgd", "momentum", "adam", "adagrad", "lars"}),
      option("learning_rate", "training", S::kModel, &R::learning_rate, "learning rate (> 0)").flag("lr"),
      option("warmup_steps", "training", S::kModel, &R::warmup_steps,
             "linear learning-rate warmup: rate x min(1, (step + 1) / N); 0 for none")
          .unit("steps"),
      option("momentum", "training", S::kModel, &R::momentum, "momentum and LARS: in [0, 1)"),
      option("nesterov", "training", S::kModel, &R::nesterov, "momentum: Nesterov's form"),
      option("beta1", "training", S::kModel, &R::beta1, "Adam: first-moment decay, in [0, 1)"),
      option("beta2", "training", S::kModel, &R::beta2, "Adam: second-moment decay, in [0, 1)"),
      option("epsilon", "training", S::kModel, &R::epsilon, "Adam, Adagrad: added to the root"),
      option("weight_decay", "training", S::kModel, &R::weight_decay, "L2 weight decay (>= 0)"),
      option("adamw", "training", S::kModel, &R::adamw, "Adam: decoupled weight decay (AdamW)"),
      option("micro_batches", "training", S::kModel, &R::micro_batches,
             "gradient accumulation over K slices of the batch (K divides it); with pp the pipeline's micro-batches"),
      option("remat", "training", S::kModel, &R::remat,
             "activation rematerialization: all recomputes the forward activations in the backward")
          .choices({"none", "all"}),
      // Compiler.
      option(
          "precision", "compiler", S::kModel, &R::precision,
          "Keras precision policy: mixed_bfloat16 computes in bf16 with f32 variables and loss, mixed_float16 in f16 "
          "with dynamic loss scaling, int8 (inference) runs int8 matmuls and convolutions")
          .choices({"float32", "mixed_bfloat16", "mixed_float16", "int8"}),
      option("matmul_precision", "compiler", S::kModel, &R::matmul_precision,
             "bf16 passes of an f32 matmul on the MXU, as XLA's: default 1, high 3, highest 6 (docs/mxu.md)")
          .choices({"default", "high", "highest"}),
      option("tiling_objective", "compiler", S::kModel, &R::tiling_objective,
             "what the GEMM tiles minimize: estimated cycles, or HBM bytes")
          .choices({"cycles", "bytes"}),
      // Parallelism over an ICI slice (docs/strategies.md).
      option(
          "topology", "parallelism", S::kModel, &R::topology,
          "data parallel over an ICI slice of this shape (4x4x4, of the preset's ici.topology): one replica per chip, "
          "gradients all-reduced (docs/interconnect.md); empty: one chip"),
      option(
          "all_reduce_bucket_mib", "parallelism", S::kModel, &R::all_reduce_bucket_mib,
          "with topology: consecutive gradient all-reduces share one collective of up to this many MiB (0: one each)")
          .unit("MiB"),
      option("dp", "parallelism", S::kModel, &R::data_parallel, "with topology: data-parallel degree")
          .shown("chips / (tp x pp)"),
      option("tp", "parallelism", S::kModel, &R::tensor_parallel,
             "with topology: tensor-parallel degree, Megatron matmul pairs split over consecutive chips"),
      option("pp", "parallelism", S::kModel, &R::pipeline_parallel,
             "with topology: pipeline-parallel degree, the layers cut into this many stages"),
      option("pipeline_schedule", "parallelism", S::kModel, &R::pipeline_schedule, "with pp: the schedule")
          .choices({"gpipe", "1f1b"}),
      // Distribution strategies (api/strategy.hpp).
      option("strategy", "strategy", S::kRun, &R::strategy,
             "the distribution strategy: mirrored (one host's chips), multi_worker_mirrored (workers hosts over the "
             "DCN), tpu (the topology slice) or ps (ParameterServerStrategy for the embedding tables); none: one "
             "chip, or the topology slice")
          .choices({"mirrored", "multi_worker_mirrored", "tpu", "ps"}),
      option("workers", "strategy", S::kRun, &R::workers,
             "multi_worker_mirrored: hosts; ps: workers, each computing the simulated step")
          .positive()
          .shown("none; ps: 32"),
      // More than one step.
      option("steps", "steps", S::kRun, &R::steps,
             "run N steps fed by the host input pipeline and PCIe (host.*, docs/host.md); 0: one step, inputs in HBM")
          .unit("steps"),
      option("precision_schedule", "steps", S::kRun, &R::precision_schedule,
             "adaptive precision: POLICY:STEPS,... (float32:100,mixed_bfloat16:900), each phase's step simulated once"),
      option("precision_rule", "steps", S::kRun, &R::precision_rule,
             "adaptive precision by rule: \"FROM->TO when STATISTIC>NUMBER [for N]\" on each real step's gradients "
             "(grad_norm, grad_norm_ratio, loss, loss_scale_overflows)"),
      option("precision_rule_steps", "steps", S::kRun, &R::precision_rule_steps,
             "training steps of a precision_rule run, each evaluated for real")
          .unit("steps"),
      // The functional run (api/functional.hpp).
      option("seed", "functional", S::kRun, &R::seed, "seed of the functional run's generated inputs"),
      option("threads", "functional", S::kRun, &R::threads,
             "CPU threads of the functional run (and precision_rule's real steps); the values do not depend on it"),
  };
}

[[noreturn]] void badValue(const std::string& shown_name, const std::string& why) {
  throw Error(ErrorKind::kInvalidConfig, shown_name + " " + why);
}

// A number's text, the shortest that reads back as the same double.
std::string numberText(double value) {
  for (int digits = 1;; ++digits) {
    std::ostringstream text;
    text.precision(digits);
    text << value;
    if (digits == std::numeric_limits<double>::max_digits10 || std::strtod(text.str().c_str(), nullptr) == value) {
      return text.str();
    }
  }
}

}  // namespace

RunOptionType runOptionType(const RunOption& option) {
  return std::visit(
      [](auto member) {
        using V = std::decay_t<decltype(RunRequest{}.*member)>;
        if constexpr (std::is_same_v<V, std::string>) return T::kString;
        if constexpr (std::is_same_v<V, bool>) return T::kBool;
        if constexpr (std::is_same_v<V, double>) return T::kDouble;
        if constexpr (std::is_same_v<V, uint64_t> || std::is_same_v<V, std::optional<uint64_t>>) return T::kUInt;
        return T::kInt;
      },
      option.field);
}

const char* runOptionTypeName(RunOptionType type) {
  switch (type) {
    case T::kInt: return "int";
    case T::kUInt: return "uint";
    case T::kDouble: return "float";
    case T::kBool: return "bool";
    case T::kString: return "str";
  }
  return "?";
}

const std::vector<RunOption>& runOptions() {
  static const std::vector<RunOption> options = makeRunOptions();
  return options;
}

const RunOption* findRunOption(std::string_view name) {
  for (const RunOption& option : runOptions()) {
    if (option.name == name || (!option.flag.empty() && option.flag == name)) return &option;
  }
  return nullptr;
}

std::string runOptionFlag(const RunOption& option) {
  if (!option.flag.empty()) return option.flag;
  std::string flag = option.name;
  for (char& c : flag) c = c == '_' ? '-' : c;
  return flag;
}

std::string runOptionDefault(const RunOption& option) {
  if (!option.shown_default.empty()) return option.shown_default;
  const RunRequest defaults;
  return std::visit(
      [&](auto member) -> std::string {
        const auto& value = defaults.*member;
        using V = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<V, std::string>) {
          return value.empty() ? "none" : value;
        } else if constexpr (std::is_same_v<V, bool>) {
          return value ? "true" : "false";
        } else if constexpr (std::is_same_v<V, double>) {
          return numberText(value);
        } else if constexpr (std::is_same_v<V, std::optional<uint64_t>>) {
          return value ? std::to_string(*value) : "none";
        } else {
          return std::to_string(value);
        }
      },
      option.field);
}

void setRunOption(RunRequest& request, const RunOption& option, const RunOptionValue& value,
                  const std::string& shown_name) {
  // The value as the type the option declares (Python gives ints for floats, say).
  const auto asInt = [&]() -> int64_t {
    if (const auto* i = std::get_if<int64_t>(&value)) return *i;
    if (const auto* u = std::get_if<uint64_t>(&value)) {
      if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) badValue(shown_name, "is too large");
      return static_cast<int64_t>(*u);
    }
    badValue(shown_name, std::string("takes an integer, not a ") + (std::holds_alternative<double>(value) ? "float"
                                                                    : std::holds_alternative<bool>(value) ? "bool"
                                                                                                          : "string"));
  };
  std::visit(
      [&](auto member) {
        auto& field = request.*member;
        using V = std::decay_t<decltype(field)>;
        if constexpr (std::is_same_v<V, std::string>) {
          const auto* text = std::get_if<std::string>(&value);
          if (text == nullptr) badValue(shown_name, "takes a string");
          field = *text;
        } else if constexpr (std::is_same_v<V, bool>) {
          const auto* flag = std::get_if<bool>(&value);
          if (flag == nullptr) badValue(shown_name, "takes true or false");
          field = *flag;
        } else if constexpr (std::is_same_v<V, double>) {
          double number = 0;
          if (const auto* d = std::get_if<double>(&value)) {
            number = *d;
          } else {
            number = static_cast<double>(asInt());
          }
          if (option.positive && !(number > 0)) badValue(shown_name, "must be > 0");
          field = number;
        } else {
          const int64_t number = asInt();
          if (option.positive && number <= 0) badValue(shown_name, "must be > 0");
          if constexpr (std::is_same_v<V, int>) {
            if (number < std::numeric_limits<int>::min() || number > std::numeric_limits<int>::max())
              badValue(shown_name, "is out of range");
            field = static_cast<int>(number);
          } else if constexpr (std::is_same_v<V, int64_t>) {
            field = number;
          } else {  // uint64_t, std::optional<uint64_t>
            if (number < 0) badValue(shown_name, "must be >= 0");
            field = static_cast<uint64_t>(number);
          }
        }
      },
      option.field);
}

void setRunOptionText(RunRequest& request, const RunOption& option, const std::string& text,
                      const std::string& shown_name) {
  switch (runOptionType(option)) {
    case T::kString: return setRunOption(request, option, text, shown_name);
    case T::kBool:
      if (text != "true" && text != "false") badValue(shown_name, "takes true or false, not '" + text + "'");
      return setRunOption(request, option, text == "true", shown_name);
    case T::kDouble: {
      char* end = nullptr;
      errno = 0;
      const double number = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(number))
        badValue(shown_name, "takes a number, not '" + text + "'");
      return setRunOption(request, option, number, shown_name);
    }
    case T::kInt:
    case T::kUInt: {
      char* end = nullptr;
      errno = 0;
      const long long number = std::strtoll(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0') badValue(shown_name, "takes an integer, not '" + text + "'");
      if (errno == ERANGE) badValue(shown_name, "is out of range");
      return setRunOption(request, option, static_cast<int64_t>(number), shown_name);
    }
  }
}

std::string runOptionsMarkdown() {
  std::ostringstream out;
  std::string group;
  for (const RunOption& option : runOptions()) {
    if (option.group != group) {
      group = option.group;
      out << (out.tellp() > 0 ? "\n" : "") << "### " << group << "\n\n";
      out << "| Python | CLI | type | default | unit | values | |\n| --- | --- | --- | --- | --- | --- | --- |\n";
    }
    std::string choices;
    for (const std::string& choice : option.choices) choices += (choices.empty() ? "" : ", ") + choice;
    out << "| `" << option.name << "` | `--" << runOptionFlag(option) << "`"
        << (option.scope == RunOptionScope::kRun ? " (run)" : "") << " | " << runOptionTypeName(runOptionType(option))
        << " | " << runOptionDefault(option) << " | " << option.unit << " | " << choices << " | " << option.doc
        << " |\n";
  }
  return out.str();
}

}  // namespace tpusim
