// AutoDistribute's plan space, memory check, ranking and reasons (api/auto_distribute.hpp),
// with a fake evaluator whose peaks and cycles are functions of the plan, and one real
// search of the MLP checked against `run` of the same plan.
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "api/auto_distribute.hpp"
#include "sim/common/error.hpp"

namespace tpusim {
namespace {

const std::string kMlp = std::string(TPUSIM_SOURCE_DIR) + "/traces/mlp.onnx";
constexpr uint64_t kGiB = 1024ull * 1024 * 1024;

AutoDistributeRequest mlpOn(const std::string& topology) {
  AutoDistributeRequest request;
  request.base.model_path = kMlp;
  request.base.topology = topology;
  return request;
}

// A Program standing for the plan: its degrees, precision and remat (in `model`) recorded,
// its peak `peak(request)` and one MXU instruction of `flops`.
struct Fake {
  std::function<uint64_t(const RunRequest&)> peak = [](const RunRequest&) { return kGiB; };
  std::function<uint64_t(const program::Program&)> cycles = [](const program::Program&) { return 1000; };
  std::set<std::string> simulated;  // "tp/remat/precision" of each simulated Program
  int compiles = 0;

  PlanEvaluator evaluator() {
    return {[this](const RunRequest& request, const HardwareParams& hw) {
              ++compiles;
              EXPECT_GT(hw.config().hbm().capacity_gib(), 1e5);  // compiled without the HBM bound
              program::Program program;
              program.set_model(request.remat);
              program.set_precision(request.precision);
              program.set_tensor_parallel(static_cast<uint32_t>(request.tensor_parallel));
              program.set_batch(static_cast<uint64_t>(*request.batch));
              program::ChipProgram* chip = program.add_chips();
              chip->mutable_memory()->set_peak_bytes(peak(request));
              program::Instruction* mxu = chip->add_instructions();
              mxu->set_unit(program::MXU);
              mxu->set_flops(1'000'000);
              return program;
            },
            [this](const program::Program& program, const HardwareParams& hw) {
              EXPECT_EQ(hw.config().hbm().capacity_gib(), 32);  // simulated on the preset as it is
              simulated.insert(std::to_string(program.tensor_parallel()) + "/" + program.model() + "/" +
                               program.precision());
              SimResult result;
              result.total_cycles = cycles(program);
              result.clock_hz = 1e9;
              return result;
            }};
  }
};

std::string errorOf(const std::function<void()>& f, ErrorKind kind = ErrorKind::kInvalidConfig) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  return "";
}

TEST(AutoDistribute, SearchesEveryFactorizationOf64ChipsWithEachRematAndPrecision) {
  Fake fake;
  const AutoDistributeResult result = autoDistribute(mlpOn("4x4x4"), fake.evaluator());
  EXPECT_EQ(result.chips, 64);
  EXPECT_EQ(result.global_batch, 32 * 64);
  EXPECT_EQ(result.dimensions, (std::vector<std::string>{"dp", "tp", "remat", "precision"}));
  // 64 = 2^6: tp in {1, 2, 4, 8, 16, 32, 64}, dp = 64 / tp; x 2 remat x 3 precisions.
  ASSERT_EQ(result.plans.size(), 7u * 2 * 3);
  EXPECT_EQ(fake.compiles, 42);
  EXPECT_EQ(fake.simulated.size(), 42u);
  std::set<std::pair<int64_t, int64_t>> degrees;
  for (const PlanResult& plan : result.plans) {
    const int64_t dp = plan.plan["dp"], tp = plan.plan["tp"];
    EXPECT_EQ(dp * tp, 64);
    EXPECT_EQ(plan.batch_per_replica, 32 * 64 / dp);  // the same global batch for every plan
    degrees.insert({dp, tp});
  }
  EXPECT_EQ(degrees.size(), 7u);
  // Every plan ties at 1000 cycles: ranked in search order, the last dimension fastest.
  EXPECT_EQ(result.plans[0].label, "dp64 tp1 remat=none float32");
  EXPECT_EQ(result.plans[1].label, "dp64 tp1 remat=none mixed_bfloat16");
  EXPECT_EQ(result.plans[3].label, "dp64 tp1 remat=all float32");
  EXPECT_EQ(result.plans[6].label, "dp32 tp2 remat=none float32");
  EXPECT_EQ(result.plans[41].label, "dp1 tp64 remat=all mixed_float16");
  EXPECT_EQ(result.plans[0].status, PlanStatus::kBest);
  EXPECT_EQ(result.plans[1].reason, "slower: ties the best (1 us), after it in search order");
  EXPECT_EQ(result.plans[41].rank, 42);
}

TEST(AutoDistribute, APlanAboveTheMemoryLimitIsRejectedWithoutBeingSimulated) {
  Fake fake;
  // 40 GiB / tp without remat, 20 GiB / tp with it.
  fake.peak = [](const RunRequest& r) { return (r.remat == "none" ? 40 : 20) * kGiB / r.tensor_parallel; };
  AutoDistributeRequest request = mlpOn("2x1x1");
  request.memory_limit_gib = 30;
  request.precisions = {"float32"};
  const AutoDistributeResult result = autoDistribute(request, fake.evaluator());
  EXPECT_EQ(result.memory_limit_bytes, 30 * kGiB);
  ASSERT_EQ(result.plans.size(), 4u);
  EXPECT_EQ(fake.compiles, 4);
  // dp2 tp1 remat=none (40 GiB) is compiled but never simulated.
  EXPECT_EQ(fake.simulated, (std::set<std::string>{"1/all/float32", "2/none/float32", "2/all/float32"}));
  const PlanResult& rejected = result.plans.back();
  EXPECT_EQ(rejected.label, "dp2 tp1 remat=none float32");
  EXPECT_EQ(rejected.status, PlanStatus::kDoesNotFit);
  EXPECT_EQ(rejected.reason, "does not fit: 40 GiB > 30 GiB");
  EXPECT_EQ(*rejected.hbm_peak_bytes, 40 * kGiB);
  EXPECT_FALSE(rejected.step_cycles.has_value());
  EXPECT_EQ(rejected.rank, 0);
  // A limit of exactly the peak fits.
  request.memory_limit_gib = 20;
  const AutoDistributeResult tight = autoDistribute(request, fake.evaluator());
  EXPECT_EQ(tight.plans[0].label, "dp2 tp1 remat=all float32");
  EXPECT_EQ(tight.plans[0].status, PlanStatus::kBest);
}

TEST(AutoDistribute, RanksByStepCyclesAndSaysHowMuchSlowerEachPlanIs) {
  Fake fake;
  // tp 1: 2000 cycles, tp 2: 1000; remat adds 420 cycles; precisions tie.
  fake.cycles = [](const program::Program& p) {
    return (p.tensor_parallel() == 2 ? 1000 : 2000) + (p.model() == "all" ? 420 : 0);
  };
  AutoDistributeRequest request = mlpOn("2x1x1");
  request.precisions = {"mixed_bfloat16", "float32"};
  const AutoDistributeResult result = autoDistribute(request, fake.evaluator());
  std::vector<std::string> order;
  for (const PlanResult& plan : result.plans) order.push_back(plan.label + " | " + plan.reason);
  EXPECT_EQ(order, (std::vector<std::string>{
                       "dp1 tp2 remat=none mixed_bfloat16 | ",
                       "dp1 tp2 remat=none float32 | slower: ties the best (1 us), after it in search order",
                       "dp1 tp2 remat=all mixed_bfloat16 | slower: 1.42x the best (1.42 us vs 1 us)",
                       "dp1 tp2 remat=all float32 | slower: 1.42x the best (1.42 us vs 1 us)",
                       "dp2 tp1 remat=none mixed_bfloat16 | slower: 2.00x the best (2 us vs 1 us)",
                       "dp2 tp1 remat=none float32 | slower: 2.00x the best (2 us vs 1 us)",
                       "dp2 tp1 remat=all mixed_bfloat16 | slower: 2.42x the best (2.42 us vs 1 us)",
                       "dp2 tp1 remat=all float32 | slower: 2.42x the best (2.42 us vs 1 us)",
                   }));
  EXPECT_EQ(result.best()->label, "dp1 tp2 remat=none mixed_bfloat16");
  // 1e6 MXU FLOPs in 1 us against tpuv4's 2 x 128 x 128 x 4 x 2 x 1050e6 FLOP/s.
  EXPECT_DOUBLE_EQ(result.plans[0].mxu_utilization, 1e6 / (1e-6 * 2.0 * 128 * 128 * 4 * 2 * 1050e6));
  const nlohmann::ordered_json json = autoDistributeJson(result);
  EXPECT_EQ(json["best"], "dp1 tp2 remat=none mixed_bfloat16");
  EXPECT_DOUBLE_EQ(json["plans"][4]["slowdown"].get<double>(), 2.0);
  EXPECT_EQ(json["plans"][4]["plan"].dump(), R"({"dp":2,"tp":1,"remat":"none","precision":"mixed_bfloat16"})");
}

TEST(AutoDistribute, APlanThatDoesNotCompileIsRejectedWithItsError) {
  Fake fake;
  fake.peak = [](const RunRequest& r) -> uint64_t {
    if (r.tensor_parallel == 2) throw Error(ErrorKind::kUnsupported, "pass tensor_parallel: no pair\nsplits");
    return kGiB;
  };
  AutoDistributeRequest request = mlpOn("2x1x1");
  request.precisions = {"float32"};
  request.remats = {"none"};
  const AutoDistributeResult result = autoDistribute(request, fake.evaluator());
  ASSERT_EQ(result.plans.size(), 2u);
  EXPECT_EQ(result.plans[1].status, PlanStatus::kCompileError);
  EXPECT_EQ(result.plans[1].reason, "compile: pass tensor_parallel: no pair splits");  // one line
  EXPECT_EQ(fake.simulated.size(), 1u);
}

TEST(AutoDistribute, AGlobalBatchThatDoesNotSplitOverDpRejectsThatPlan) {
  Fake fake;
  AutoDistributeRequest request = mlpOn("4x1x1");
  request.base.batch = 2;
  request.precisions = {"float32"};
  request.remats = {"none"};
  const AutoDistributeResult result = autoDistribute(request, fake.evaluator());
  ASSERT_EQ(result.plans.size(), 3u);  // tp 1, 2, 4
  EXPECT_EQ(result.plans[0].label, "dp2 tp2 remat=none float32");
  EXPECT_EQ(result.plans[2].label, "dp4 tp1 remat=none float32");
  EXPECT_EQ(result.plans[2].reason, "compile: the global batch 2 does not split over dp 4");
  EXPECT_EQ(fake.compiles, 2);
}

TEST(AutoDistribute, BadInputsAreOneLineErrors) {
  Fake fake;
  const auto search = [&](AutoDistributeRequest request) { autoDistribute(request, fake.evaluator()); };
  AutoDistributeRequest request = mlpOn("2x1x1");
  request.memory_limit_gib = 0;
  EXPECT_EQ(errorOf([&] { search(request); }), "--memory-limit-gib must be > 0");
  request.memory_limit_gib = -3;
  EXPECT_EQ(errorOf([&] { search(request); }), "--memory-limit-gib must be > 0");
  request.memory_limit_gib = 40;
  EXPECT_EQ(errorOf([&] { search(request); }),
            "--memory-limit-gib 40 is above tpuv4's HBM of 32 GiB per chip (raise it with --set "
            "hbm.capacity_gib=40)");
  request = mlpOn("2x1x1");
  request.precisions = {"float32", "fp8"};
  EXPECT_NE(errorOf([&] { search(request); }).find("fp8"), std::string::npos);
  request = mlpOn("");
  EXPECT_EQ(errorOf([&] { search(request); }), "autodistribute needs --topology, the slice to distribute over");
  request = mlpOn("4x4");  // not a 3-D torus shape
  EXPECT_NE(errorOf([&] { search(request); }), "");
  request = mlpOn("2x1x1");
  request.base.tensor_parallel = 2;
  EXPECT_NE(errorOf([&] { search(request); }).find("leave --dp, --tp"), std::string::npos);
  request = mlpOn("2x1x1");
  request.base.model_path = std::string(TPUSIM_SOURCE_DIR) + "/traces/missing.onnx";
  EXPECT_EQ(errorOf([&] { search(request); }, ErrorKind::kInvalidInput),
            "model file '" + request.base.model_path + "' does not exist");
  EXPECT_EQ(fake.compiles, 0);
}

TEST(AutoDistribute, AModelThatNoPlanCompilesIsOneError) {
  Fake fake;
  fake.peak = [](const RunRequest&) -> uint64_t { throw Error(ErrorKind::kUnsupported, "no such op"); };
  AutoDistributeRequest request = mlpOn("2x1x1");
  request.precisions = {"float32"};
  EXPECT_EQ(errorOf([&] { autoDistribute(request, fake.evaluator()); }),
            "no plan of mlp.onnx compiles on 2x1x1 (dp2 tp1 remat=none float32: compile: no such op)");
}

// The real compiler and simulator: each simulated plan is the run of the same options.
TEST(AutoDistribute, ASimulatedPlanIsTheRunOfItsOptions) {
  AutoDistributeRequest request = mlpOn("2x1x1");
  request.precisions = {"float32"};
  request.remats = {"none"};
  const AutoDistributeResult result = autoDistribute(request);
  ASSERT_EQ(result.plans.size(), 2u);
  for (const PlanResult& plan : result.plans) {
    ASSERT_GT(plan.rank, 0) << plan.reason;
    RunRequest run = request.base;
    run.tensor_parallel = plan.plan["tp"];
    run.batch = plan.batch_per_replica;
    run.instruction_timeline = false;
    const RunOutcome outcome = runRequest(run);
    EXPECT_EQ(*plan.step_cycles, outcome.report["total_cycles"].get<uint64_t>()) << plan.label;
    EXPECT_EQ(*plan.hbm_peak_bytes, outcome.report["memory"]["peak_bytes"].get<uint64_t>()) << plan.label;
  }
  // Deterministic: a second search gives the same JSON.
  EXPECT_EQ(autoDistributeJson(autoDistribute(request)).dump(), autoDistributeJson(result).dump());
}

}  // namespace
}  // namespace tpusim
