// The run options' one table (api/run_options.hpp): each option sets its field, checks its
// value, names its choices as their parsers accept them, and docs/run-options.md is the table.
#include "api/run_options.hpp"

#include <gtest/gtest.h>

#include <set>

#include "api/strategy.hpp"
#include "frontend/train/precision_policy.hpp"
#include "frontend/train/training_graph.hpp"
#include "sim/common/error.hpp"
#include "tests/support/doc_section.hpp"
#include "tests/support/expect_error.hpp"

namespace tpusim {
namespace {

std::string errorOf(const std::function<void()>& action) {
  return testing::errorMessage(action, ErrorKind::kInvalidConfig);
}

TEST(RunOptions, NamesAndFlagsAreUniqueAndFound) {
  std::set<std::string> names, flags;
  for (const RunOption& option : runOptions()) {
    EXPECT_TRUE(names.insert(option.name).second) << option.name;
    EXPECT_TRUE(flags.insert(runOptionFlag(option)).second) << option.name;
    EXPECT_EQ(findRunOption(option.name), &option);
    EXPECT_FALSE(option.doc.empty()) << option.name;
    EXPECT_TRUE(option.choices.empty() || runOptionType(option) == RunOptionType::kString) << option.name;
  }
  EXPECT_EQ(findRunOption("lr"), findRunOption("learning_rate"));
  EXPECT_EQ(runOptionFlag(*findRunOption("micro_batches")), "micro-batches");
  EXPECT_EQ(findRunOption("no_such_option"), nullptr);
}

TEST(RunOptions, TextSetsTheFieldOfEachType) {
  RunRequest request;
  setRunOptionText(request, *findRunOption("lr"), "0.5", "--lr");
  setRunOptionText(request, *findRunOption("micro_batches"), "4", "--micro-batches");
  setRunOptionText(request, *findRunOption("steps"), "7", "--steps");
  setRunOptionText(request, *findRunOption("threads"), "2", "--threads");
  setRunOptionText(request, *findRunOption("optimizer"), "adam", "--optimizer");
  setRunOptionText(request, *findRunOption("workers"), "3", "--workers");
  setRunOption(request, *findRunOption("nesterov"), true, "nesterov");
  setRunOption(request, *findRunOption("all_reduce_bucket_mib"), int64_t{25}, "all_reduce_bucket_mib");  // an int
  EXPECT_EQ(request.learning_rate, 0.5);
  EXPECT_EQ(request.micro_batches, 4);
  EXPECT_EQ(request.steps, 7u);
  EXPECT_EQ(request.threads, 2);
  EXPECT_EQ(request.optimizer, "adam");
  EXPECT_EQ(request.workers, std::optional<uint64_t>(3));
  EXPECT_TRUE(request.nesterov);
  EXPECT_EQ(request.all_reduce_bucket_mib, 25.0);
}

TEST(RunOptions, ABadValueIsAOneLineErrorNamingTheOption) {
  RunRequest request;
  EXPECT_EQ(errorOf([&] { setRunOptionText(request, *findRunOption("lr"), "fast", "--lr"); }),
            "--lr takes a number, not 'fast'");
  EXPECT_EQ(errorOf([&] { setRunOptionText(request, *findRunOption("steps"), "2.5", "--steps"); }),
            "--steps takes an integer, not '2.5'");
  EXPECT_EQ(errorOf([&] { setRunOptionText(request, *findRunOption("steps"), "-1", "--steps"); }),
            "--steps must be >= 0");
  EXPECT_EQ(errorOf([&] { setRunOption(request, *findRunOption("workers"), int64_t{0}, "workers"); }),
            "workers must be > 0");
  EXPECT_EQ(errorOf([&] { setRunOption(request, *findRunOption("threads"), int64_t{1} << 40, "threads"); }),
            "threads is out of range");
  EXPECT_EQ(errorOf([&] { setRunOption(request, *findRunOption("loss"), 3.0, "loss"); }), "loss takes a string");
  EXPECT_EQ(errorOf([&] { setRunOption(request, *findRunOption("tp"), 2.0, "tp"); }),
            "tp takes an integer, not a float");
}

// Each listed value is one its parser accepts, so --help and the docs never offer a bad one.
TEST(RunOptions, ChoicesAreWhatTheParsersAccept) {
  for (const std::string& loss : findRunOption("loss")->choices) EXPECT_NO_THROW(parseLoss(loss)) << loss;
  for (const std::string& name : findRunOption("optimizer")->choices) EXPECT_NO_THROW(parseOptimizer(name)) << name;
  for (const std::string& remat : findRunOption("remat")->choices) EXPECT_NO_THROW(parseRemat(remat)) << remat;
  for (const std::string& policy : findRunOption("precision")->choices) {
    EXPECT_NO_THROW(parsePrecisionPolicy(policy)) << policy;
  }
  for (const std::string& strategy : findRunOption("strategy")->choices) {
    EXPECT_NO_THROW(strategyFromName(strategy)) << strategy;
  }
}

TEST(RunOptions, DefaultsAreThoseOfARunRequest) {
  EXPECT_EQ(runOptionDefault(*findRunOption("learning_rate")), "0.01");
  EXPECT_EQ(runOptionDefault(*findRunOption("epsilon")), "1e-08");
  EXPECT_EQ(runOptionDefault(*findRunOption("optimizer")), "sgd");
  EXPECT_EQ(runOptionDefault(*findRunOption("precision_rule_steps")), "10");
  EXPECT_EQ(runOptionDefault(*findRunOption("topology")), "none");
  EXPECT_EQ(runOptionDefault(*findRunOption("dp")), "chips / (tp x pp)");  // shown, not the 0 it stands for
}

// docs/run-options.md holds the table between its markers; scripts/update-golden.sh writes it.
TEST(RunOptions, TheDocsTableIsTheTable) {
  testing::expectDocSection(TPUSIM_SOURCE_DIR "/docs/run-options.md", "run options", runOptionsMarkdown());
}

}  // namespace
}  // namespace tpusim
