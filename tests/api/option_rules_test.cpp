// Which run options go together (api/option_rules.hpp): each rule refuses what it names with
// its one-line error, lets through what it allows, and docs/run-options.md lists the rules.
#include "api/option_rules.hpp"

#include <gtest/gtest.h>

#include "api/run_options.hpp"
#include "tests/support/doc_section.hpp"
#include "tests/support/expect_error.hpp"

namespace tpusim {
namespace {

RunRequest with(const std::function<void(RunRequest&)>& set) {
  RunRequest request;
  request.model_path = "model.onnx";
  set(request);
  return request;
}

std::string errorOf(const RunRequest& request, ErrorKind kind = ErrorKind::kInvalidConfig) {
  return testing::errorMessage([&] { checkOptionRules(request); }, kind);
}

TEST(OptionRules, EachRuleIsAboutARunOption) {
  for (const OptionRule& rule : optionRules()) {
    EXPECT_NE(findRunOption(rule.option), nullptr) << rule.option;
    EXPECT_FALSE(rule.needs.empty()) << rule.option;
    EXPECT_FALSE(rule.given(RunRequest{})) << rule.option << ": a request with no options gives none";
  }
  EXPECT_NO_THROW(checkOptionRules(RunRequest{}));
}

TEST(OptionRules, TheOptimizersOptionsNeedTheirOptimizer) {
  EXPECT_EQ(errorOf(with([](RunRequest& r) { r.nesterov = true; })),
            "--nesterov applies to the momentum optimizer only");
  EXPECT_EQ(errorOf(with([](RunRequest& r) { r.adamw = true, r.optimizer = "momentum"; })),
            "--adamw applies to the adam optimizer only");
  EXPECT_NO_THROW(checkOptionRules(with([](RunRequest& r) { r.nesterov = true, r.optimizer = "momentum"; })));
  EXPECT_NO_THROW(checkOptionRules(with([](RunRequest& r) { r.adamw = true, r.optimizer = "adam"; })));
}

TEST(OptionRules, StrategiesTakeTheirOwnOptions) {
  EXPECT_EQ(errorOf(with([](RunRequest& r) { r.workers = 2; })),
            "--workers applies to --strategy multi_worker_mirrored or ps");
  EXPECT_EQ(errorOf(with([](RunRequest& r) { r.strategy = "mirrored", r.workers = 2; })),
            "--workers applies to --strategy multi_worker_mirrored or ps");
  EXPECT_EQ(errorOf(with([](RunRequest& r) { r.strategy = "multi_worker_mirrored"; })),
            "--strategy multi_worker_mirrored needs --workers N (hosts)");
  EXPECT_EQ(errorOf(with([](RunRequest& r) { r.strategy = "mirrored", r.topology = "4x4x4"; })),
            "--topology gives TPUStrategy's slice (--strategy tpu); mirrored runs on hosts of host.chips_per_host "
            "chips");
  EXPECT_EQ(errorOf(with([](RunRequest& r) { r.strategy = "TPUStrategy"; })),  // TensorFlow's name too
            "--strategy tpu needs --topology SHAPE (the pod slice)");
  EXPECT_EQ(
      errorOf(with([](RunRequest& r) { r.strategy = "ps", r.model_path = "step.tpuprog"; }), ErrorKind::kUnsupported),
      "--strategy ps needs a model, not a saved Program (it has no graph)");
  EXPECT_NO_THROW(checkOptionRules(with([](RunRequest& r) { r.strategy = "multi_worker_mirrored", r.workers = 2; })));
  EXPECT_NO_THROW(checkOptionRules(with([](RunRequest& r) { r.strategy = "ps", r.workers = 8; })));
  EXPECT_NO_THROW(checkOptionRules(with([](RunRequest& r) { r.strategy = "tpu", r.topology = "2x2x1"; })));
}

const std::string kRule = "float32->mixed_bfloat16 when loss>1";
const std::string kSchedule = "float32:10,mixed_bfloat16:90";

TEST(OptionRules, AdaptivePrecisionRunsItsOwnSteps) {
  EXPECT_EQ(errorOf(with([](RunRequest& r) { r.precision_rule = kRule, r.precision_schedule = kSchedule; })),
            "give one of --precision, --precision-schedule and --precision-rule");
  EXPECT_EQ(errorOf(with([](RunRequest& r) { r.precision_rule = kRule, r.steps = 3; }), ErrorKind::kUnsupported),
            "--precision-rule runs its own real steps on one chip; it does not combine with --steps, --strategy or "
            "--functional");
  EXPECT_EQ(errorOf(with([](RunRequest& r) { r.precision_rule = kRule, r.mode = "inference"; })),
            "--precision-rule reads gradients: it needs --mode training");
  EXPECT_EQ(errorOf(with([](RunRequest& r) { r.precision_schedule = kSchedule, r.precision = "mixed_bfloat16"; })),
            "give --precision or --precision-schedule, not both");
  EXPECT_EQ(errorOf(with([](RunRequest& r) { r.precision_schedule = kSchedule, r.functional = true; }),
                    ErrorKind::kUnsupported),
            "--precision-schedule runs each phase's step on inputs in HBM; it does not combine with --steps, "
            "--strategy or --functional");
}

TEST(OptionRules, TheDocsListTheRules) {
  testing::expectDocSection(TPUSIM_SOURCE_DIR "/docs/run-options.md", "option rules", optionRulesMarkdown());
}

}  // namespace
}  // namespace tpusim
