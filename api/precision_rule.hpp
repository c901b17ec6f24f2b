// Adaptive precision by rule (`tpusim run --precision-rule "mixed_bfloat16->float32 when
// grad_norm_ratio>2" --precision-rule-steps 20`): a multi-step training run that starts under
// one policy and switches to another once a statistic of the step's real gradients meets the
// rule's condition. The steps are real: each is evaluated on the CPU reference executor with
// the MXUs' numerics (as --functional), its updated weights and optimizer state fed to the
// next step, each step on a batch generated from seed + step. The variables are f32 under
// every training policy, so they carry across the switch unchanged. Each policy's step is
// also compiled and simulated once, cycle by cycle, for the phases' step times (as the
// schedule, api/precision_schedule.hpp). docs/frontend.md ("Adaptive precision by rule").
#pragma once

#include <cstdint>
#include <string>

#include "api/session.hpp"

namespace tpusim {

// The statistics a rule can test, computed from each step's values:
//   grad_norm             the global L2 norm of the weight gradients the optimizer reads
//                         (unscaled, under mixed_float16)
//   grad_norm_ratio       grad_norm over the previous step's (none at step 0: never holds)
//   loss                  the step's loss
//   loss_scale_overflows  mixed_float16: attempts of the step whose gradients were not
//                         finite (each halves the loss scale and reruns the step)
enum class RuleStatistic { kGradNorm, kGradNormRatio, kLoss, kLossScaleOverflows };
const char* ruleStatisticName(RuleStatistic statistic);

struct PrecisionRule {
  std::string from;  // the policy the run starts in
  std::string to;    // the policy it switches to, once
  RuleStatistic statistic = RuleStatistic::kGradNorm;
  std::string comparison;  // ">", ">=", "<" or "<="
  double threshold = 0;
  uint64_t patience = 1;  // consecutive steps the condition must hold
  bool holds(double value) const;
  std::string text() const;  // the rule, normalized
};

// "FROM->TO when STATISTIC CMP NUMBER [for N]" (spaces optional around the names and the
// comparison). Throws Error: kInvalidConfig for a rule that does not parse, an unknown
// policy or statistic, FROM equal to TO, a patience that is not a positive integer, or
// loss_scale_overflows when FROM is not mixed_float16; kUnsupported for int8 (inference only).
PrecisionRule parsePrecisionRule(const std::string& text);

// Runs request.precision_rule over request.precision_rule_steps training steps. The outcome
// is the last phase's step, its report with a "precision_rule" section
// (docs/report-schema.md). Refused beside --precision, --precision-schedule, --steps,
// --strategy, --functional, inference mode and a model without weight values.
RunOutcome runPrecisionRule(const RunRequest& request);

}  // namespace tpusim
