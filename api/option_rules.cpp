#include "api/option_rules.hpp"

#include <sstream>

#include "api/strategy.hpp"
#include "frontend/program_io.hpp"

namespace tpusim {

namespace {

using R = const RunRequest&;

std::function<std::string(R)> text(std::string message) {
  return [message](R) { return message; };
}

bool strategyIs(R r, std::initializer_list<Strategy> strategies) {
  const Strategy strategy = strategyFromName(r.strategy);
  for (const Strategy s : strategies) {
    if (s == strategy) return true;
  }
  return false;
}

std::vector<OptionRule> makeOptionRules() {
  const ErrorKind config = ErrorKind::kInvalidConfig;
  const ErrorKind unsupported = ErrorKind::kUnsupported;
  return {
      // Adaptive precision runs steps of its own.
      {"precision_rule", "no precision or precision_schedule", [](R r) { return !r.precision_rule.empty(); },
       [](R r) { return r.precision == "float32" && r.precision_schedule.empty(); }, config,
       text("give one of --precision, --precision-schedule and --precision-rule")},
      {"precision_rule", "no steps, strategy or functional run", [](R r) { return !r.precision_rule.empty(); },
       [](R r) { return r.steps == 0 && r.strategy.empty() && !r.functional; }, unsupported,
       text("--precision-rule runs its own real steps on one chip; it does not combine with --steps, --strategy or "
            "--functional")},
      {"precision_rule", "mode training", [](R r) { return !r.precision_rule.empty(); },
       [](R r) { return r.mode.value_or("training") == "training"; }, config,
       text("--precision-rule reads gradients: it needs --mode training")},
      {"precision_schedule", "no precision", [](R r) { return !r.precision_schedule.empty(); },
       [](R r) { return r.precision == "float32"; }, config,
       text("give --precision or --precision-schedule, not both")},
      {"precision_schedule", "no steps, strategy or functional run", [](R r) { return !r.precision_schedule.empty(); },
       [](R r) { return r.steps == 0 && r.strategy.empty() && !r.functional; }, unsupported,
       text("--precision-schedule runs each phase's step on inputs in HBM; it does not combine with --steps, "
            "--strategy or --functional")},
      // The optimizer's own options.
      {"nesterov", "optimizer momentum", [](R r) { return r.nesterov; }, [](R r) { return r.optimizer == "momentum"; },
       config, text("--nesterov applies to the momentum optimizer only")},
      {"adamw", "optimizer adam", [](R r) { return r.adamw; }, [](R r) { return r.optimizer == "adam"; }, config,
       text("--adamw applies to the adam optimizer only")},
      // Strategies and the slice they run on.
      {"workers", "strategy multi_worker_mirrored or ps", [](R r) { return r.workers.has_value(); },
       [](R r) {
         return strategyIs(r, {Strategy::kMultiWorkerMirrored, Strategy::kParameterServer});
       },
       config, text("--workers applies to --strategy multi_worker_mirrored or ps")},
      {"strategy", "mirrored, multi_worker_mirrored: no topology",
       [](R r) {
         return strategyIs(r, {Strategy::kMirrored, Strategy::kMultiWorkerMirrored});
       },
       [](R r) { return r.topology.empty(); }, config,
       [](R r) {
         return std::string("--topology gives TPUStrategy's slice (--strategy tpu); ") +
                strategyName(strategyFromName(r.strategy)) + " runs on hosts of host.chips_per_host chips";
       }},
      {"strategy", "tpu: a topology", [](R r) { return strategyIs(r, {Strategy::kTpu}); },
       [](R r) { return !r.topology.empty(); }, config, text("--strategy tpu needs --topology SHAPE (the pod slice)")},
      {"strategy", "multi_worker_mirrored: workers",
       [](R r) { return strategyIs(r, {Strategy::kMultiWorkerMirrored}); }, [](R r) { return r.workers.has_value(); },
       config, text("--strategy multi_worker_mirrored needs --workers N (hosts)")},
      {"strategy", "ps: a model, not a saved Program", [](R r) { return strategyIs(r, {Strategy::kParameterServer}); },
       [](R r) { return !isProgramPath(r.model_path); }, unsupported,
       text("--strategy ps needs a model, not a saved Program (it has no graph)")},
  };
}

}  // namespace

const std::vector<OptionRule>& optionRules() {
  static const std::vector<OptionRule> rules = makeOptionRules();
  return rules;
}

void checkOptionRules(const RunRequest& request) {
  for (const OptionRule& rule : optionRules()) {
    if (rule.given(request) && !rule.holds(request)) throw Error(rule.kind, rule.message(request));
  }
}

std::string optionRulesMarkdown() {
  std::ostringstream out;
  out << "| option | needs |\n| --- | --- |\n";
  for (const OptionRule& rule : optionRules()) out << "| `" << rule.option << "` | " << rule.needs << " |\n";
  return out.str();
}

}  // namespace tpusim
