#include "api/precision_rule.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

#include "api/functional.hpp"
#include "frontend/train/loss_scaling.hpp"
#include "frontend/train/precision_policy.hpp"
#include "reference/cpu/cpu_executor.hpp"
#include "sim/common/error.hpp"

namespace tpusim {

namespace {

using Json = nlohmann::ordered_json;

[[noreturn]] void bad(const std::string& text, const std::string& why) {
  throw Error(ErrorKind::kInvalidConfig, "precision rule '" + text + "': " + why +
                                             " (FROM->TO when STATISTIC>NUMBER [for N], e.g. "
                                             "mixed_bfloat16->float32 when grad_norm_ratio>2)");
}

std::string trimmed(const std::string& text) {
  size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return text.substr(begin, end - begin);
}

RuleStatistic parseStatistic(const std::string& text, const std::string& name) {
  if (name == "grad_norm") return RuleStatistic::kGradNorm;
  if (name == "grad_norm_ratio") return RuleStatistic::kGradNormRatio;
  if (name == "loss") return RuleStatistic::kLoss;
  if (name == "loss_scale_overflows") return RuleStatistic::kLossScaleOverflows;
  bad(text, "unknown statistic '" + name + "' (grad_norm, grad_norm_ratio, loss or loss_scale_overflows)");
}

bool isLossOp(ir::OpType type) {
  return type == ir::OpType::kSoftmaxCrossEntropy || type == ir::OpType::kNllLoss || type == ir::OpType::kMseLoss;
}

// What one real step gave: its values and the statistics a rule reads.
struct StepValues {
  std::vector<ir::TensorValue> values;  // by tensor id
  double grad_norm = 0;
  double loss = NAN;
  uint64_t overflows = 0;
};

bool isParameterUpdate(const ir::Op& op) {
  return op.type == ir::OpType::kSgdUpdate ||
         (op.type == ir::OpType::kOptimizerUpdate && op.update_target == ir::UpdateTarget::kParameter);
}

// What runStep() and the caller read after a step: its outputs, the gradients the parameter
// updates read, the losses and the gradients-finite flag.
std::vector<int> readAfterStep(const ir::Graph& graph) {
  std::vector<int> read = stepOutputIds(graph);
  for (const ir::Op& op : graph.ops()) {
    if (isParameterUpdate(op)) read.push_back(op.inputs[1]);
    if (isLossOp(op.type)) read.push_back(op.outputs[0]);
  }
  for (const ir::Tensor& tensor : graph.tensors()) {
    if (tensor.name == kGradientsFiniteTensor) read.push_back(tensor.id);
  }
  return read;
}

// One training step on the CPU executor; under loss scaling a step whose gradients are not
// finite is rerun at half the scale (`scale` carries across steps, as Keras's does).
StepValues runStep(const ModelGraph& built, const reference::CpuExecutor& executor,
                   std::map<std::string, ir::TensorValue> feeds, double& scale) {
  const ir::Graph& graph = built.graph;
  const auto& tensors = graph.tensors();
  const bool loss_scaled =
      std::any_of(tensors.begin(), tensors.end(), [](const ir::Tensor& t) { return t.name == kLossScaleTensor; });
  StepValues step;
  while (true) {
    if (loss_scaled) feeds[kLossScaleTensor] = ir::TensorValue{{}, DType::kF32, {scale}, {}};
    step.values = executor.run(feeds);
    if (!loss_scaled) break;
    int finite_id = -1;
    for (const ir::Tensor& t : tensors) finite_id = t.name == kGradientsFiniteTensor ? t.id : finite_id;
    if (step.values[static_cast<size_t>(finite_id)].ints.at(0) != 0 || scale <= 1) break;
    ++step.overflows;
    scale /= 2;
  }
  double squares = 0;
  for (const ir::Op& op : graph.ops()) {
    if (isParameterUpdate(op)) {
      for (double g : step.values[static_cast<size_t>(op.inputs[1])].floats) squares += g * g;
    }
    if (isLossOp(op.type)) step.loss = step.values[static_cast<size_t>(op.outputs[0])].floats.at(0);
  }
  step.grad_norm = std::sqrt(squares);
  return step;
}

}  // namespace

const char* ruleStatisticName(RuleStatistic statistic) {
  switch (statistic) {
    case RuleStatistic::kGradNorm: return "grad_norm";
    case RuleStatistic::kGradNormRatio: return "grad_norm_ratio";
    case RuleStatistic::kLoss: return "loss";
    case RuleStatistic::kLossScaleOverflows: return "loss_scale_overflows";
  }
  return "grad_norm";
}

bool PrecisionRule::holds(double value) const {
  if (std::isnan(value)) return false;
  if (comparison == ">") return value > threshold;
  if (comparison == ">=") return value >= threshold;
  if (comparison == "<") return value < threshold;
  return value <= threshold;
}

std::string PrecisionRule::text() const {
  char number[64];
  std::snprintf(number, sizeof number, "%.17g", threshold);
  return from + "->" + to + " when " + ruleStatisticName(statistic) + comparison + number + " for " +
         std::to_string(patience);
}

PrecisionRule parsePrecisionRule(const std::string& text) {
  const size_t arrow = text.find("->");
  if (arrow == std::string::npos) bad(text, "no '->' between the two policies");
  const size_t when = text.find(" when ", arrow);
  if (when == std::string::npos) bad(text, "no ' when ' before the condition");
  PrecisionRule rule;
  rule.from = trimmed(text.substr(0, arrow));
  rule.to = trimmed(text.substr(arrow + 2, when - arrow - 2));
  for (const std::string& policy : {rule.from, rule.to}) {
    if (parsePrecisionPolicy(policy) == PrecisionPolicy::kInt8) {  // the name's own error first
      throw Error(ErrorKind::kUnsupported,
                  "precision rule '" + text + "': int8 is inference only, and a rule switches training steps");
    }
  }
  if (rule.from == rule.to) bad(text, "FROM and TO are the same policy");
  std::string condition = trimmed(text.substr(when + 6));
  const size_t for_at = condition.find(" for ");
  if (for_at != std::string::npos) {
    const std::string count = trimmed(condition.substr(for_at + 5));
    bool digits = !count.empty() && count.size() <= 9;
    for (char ch : count) digits = digits && std::isdigit(static_cast<unsigned char>(ch));
    rule.patience = digits ? std::stoull(count) : 0;
    if (rule.patience == 0) bad(text, "the patience after 'for' must be a positive integer");
    condition = trimmed(condition.substr(0, for_at));
  }
  const size_t op = condition.find_first_of("<>");
  if (op == std::string::npos) bad(text, "the condition has no comparison (>, >=, < or <=)");
  const bool or_equal = op + 1 < condition.size() && condition[op + 1] == '=';
  rule.comparison = condition.substr(op, or_equal ? 2 : 1);
  rule.statistic = parseStatistic(text, trimmed(condition.substr(0, op)));
  const std::string number = trimmed(condition.substr(op + rule.comparison.size()));
  size_t used = 0;
  try {
    rule.threshold = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (number.empty() || used != number.size() || !std::isfinite(rule.threshold)) {
    bad(text, "the threshold '" + number + "' is not a finite number");
  }
  if (rule.statistic == RuleStatistic::kLossScaleOverflows && rule.from != "mixed_float16") {
    bad(text, "loss_scale_overflows needs FROM mixed_float16 (only it scales the loss)");
  }
  return rule;
}

RunOutcome runPrecisionRule(const RunRequest& request) {
  if (request.precision_rule_steps < 1) {
    throw Error(ErrorKind::kInvalidConfig, "--precision-rule-steps must be at least 1");
  }
  const PrecisionRule rule = parsePrecisionRule(request.precision_rule);
  const HardwareParams hw = resolveHardware(request);
  const reference::MxuNumericsOptions mxu = mxuNumericsOf(hw, request);
  std::map<std::string, ModelGraph> graphs;  // each policy's training graph, built once
  const auto graphOf = [&](const std::string& policy) -> const ModelGraph& {
    auto at = graphs.find(policy);
    if (at != graphs.end()) return at->second;
    RunRequest r = request;
    r.precision = policy;
    r.precision_rule.clear();
    ModelGraph built = buildModelGraph(r);
    if (built.model.shape_only_weights) {
      throw Error(ErrorKind::kUnsupported, "--precision-rule trains for real and needs the weight values, and " +
                                               request.model_path + " stores shapes only");
    }
    return graphs.emplace(policy, std::move(built)).first->second;
  };

  std::map<std::string, ir::TensorValue> carried;  // weights and optimizer state, by name
  double scale = kInitialLossScale;
  std::string policy = rule.from;
  std::optional<uint64_t> switch_step;  // the last step under FROM, when the rule fired
  uint64_t streak = 0;
  double previous_norm = NAN;
  Json steps = Json::array();
  for (uint64_t s = 0; s < request.precision_rule_steps; ++s) {
    const ModelGraph& built = graphOf(policy);
    std::map<std::string, ir::TensorValue> feeds = carried;
    for (auto& [name, value] : generatedInputs(built, request.seed + s)) feeds[name] = std::move(value);
    const reference::CpuExecutor executor(built.graph, reference::CpuOptions{request.threads, mxu},
                                          readAfterStep(built.graph));
    const StepValues step = runStep(built, executor, completeFeeds(built, std::move(feeds)), scale);
    for (int id : stepOutputIds(built.graph)) {
      const ir::Tensor& out = built.graph.tensor(id);
      if (out.alias_of >= 0) carried[built.graph.tensor(out.alias_of).name] = step.values[static_cast<size_t>(id)];
    }
    const double ratio = s == 0 ? NAN : step.grad_norm / previous_norm;
    previous_norm = step.grad_norm;
    double value = step.grad_norm;
    if (rule.statistic == RuleStatistic::kGradNormRatio) value = ratio;
    if (rule.statistic == RuleStatistic::kLoss) value = step.loss;
    if (rule.statistic == RuleStatistic::kLossScaleOverflows) value = static_cast<double>(step.overflows);
    const bool holds = !switch_step && rule.holds(value);
    streak = holds ? streak + 1 : 0;
    Json row = {{"step", s},
                {"policy", policy},
                {"grad_norm", step.grad_norm},
                {"grad_norm_ratio", std::isnan(ratio) ? Json(nullptr) : Json(ratio)},
                {"loss", std::isnan(step.loss) ? Json(nullptr) : Json(step.loss)}};
    if (needsLossScaling(parsePrecisionPolicy(policy))) {
      row["loss_scale_overflows"] = step.overflows;
      row["loss_scale"] = scale;
    }
    row["condition_holds"] = holds;
    steps.push_back(row);
    if (!switch_step && streak >= rule.patience) {
      switch_step = s;
      policy = rule.to;
    }
  }

  // Each phase's step time, simulated once per policy.
  std::map<std::string, RunOutcome> timed;
  const auto timedOf = [&](const std::string& name) -> const RunOutcome& {
    auto at = timed.find(name);
    if (at != timed.end()) return at->second;
    RunRequest r = request;
    r.precision = name;
    r.precision_rule.clear();
    return timed.emplace(name, runRequest(r)).first->second;
  };
  const uint64_t total = request.precision_rule_steps;
  const uint64_t first_steps = switch_step ? *switch_step + 1 : total;
  Json phases = Json::array();
  double total_s = 0;
  const auto addPhase = [&](const std::string& name, uint64_t first, uint64_t count, const std::string& why) {
    const Json& report = timedOf(name).report;
    const double step_s = report.at("step_time_s").get<double>();
    phases.push_back({{"policy", name},
                      {"first_step", first},
                      {"steps", count},
                      {"why", why},
                      {"step_cycles", report.at("total_cycles")},
                      {"step_time_s", step_s},
                      {"phase_time_s", step_s * static_cast<double>(count)}});
    total_s += step_s * static_cast<double>(count);
  };
  addPhase(rule.from, 0, first_steps, "the rule's starting policy");
  std::string reason = "the condition did not hold for " + std::to_string(rule.patience) + " consecutive step(s)";
  if (switch_step) {
    const Json& row = steps[*switch_step];
    const Json& value = row.at(ruleStatisticName(rule.statistic));
    char text[160];
    std::snprintf(text, sizeof text, "%s %.6g %s %.6g at step %llu (%llu consecutive step(s))",
                  ruleStatisticName(rule.statistic), value.get<double>(), rule.comparison.c_str(), rule.threshold,
                  static_cast<unsigned long long>(*switch_step), static_cast<unsigned long long>(rule.patience));
    reason = text;
    if (first_steps < total) addPhase(rule.to, first_steps, total - first_steps, reason);
  }
  RunOutcome outcome = timedOf(phases.back().at("policy").get<std::string>());
  outcome.report["precision_rule"] = {
      {"method",
       "every step trained for real on the CPU executor with the MXUs' numerics (weights carried step to step, "
       "inputs from seed + step); each phase's step compiled and simulated once"},
      {"rule", rule.text()},
      {"statistic", ruleStatisticName(rule.statistic)},
      {"fired", switch_step.has_value()},
      {"switch_after_step", switch_step ? Json(*switch_step) : Json(nullptr)},
      {"reason", reason},
      {"steps", total},
      {"seed", request.seed},
      {"per_step", steps},
      {"phases", phases},
      {"total_time_s", total_s},
      {"mean_step_time_s", total_s / static_cast<double>(total)}};
  return outcome;
}

}  // namespace tpusim
