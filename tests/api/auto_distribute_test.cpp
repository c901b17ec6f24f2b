// AutoDistribute's plan space, memory check, ranking and reasons (api/auto_distribute.hpp),
// with a fake evaluator whose peaks and cycles are functions of the plan, and one real
// search of the MLP, pipeline plans among them, checked against `run` of the same plans.
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
// its peak `peak(request)` and one MXU instruction of 1e6 FLOPs.
program::Program fakeProgram(const RunRequest& request, uint64_t peak) {
  program::Program program;
  program.set_model(request.remat);
  program.set_precision(request.precision);
  program.set_tensor_parallel(static_cast<uint32_t>(request.tensor_parallel));
  program.set_batch(static_cast<uint64_t>(*request.batch));
  program::ChipProgram* chip = program.add_chips();
  chip->mutable_memory()->set_peak_bytes(peak);
  program::Instruction* mxu = chip->add_instructions();
  mxu->set_unit(program::MXU);
  mxu->set_flops(1'000'000);
  return program;
}

struct Fake {
  std::function<uint64_t(const RunRequest&)> peak = [](const RunRequest&) { return kGiB; };
  std::function<uint64_t(const program::Program&)> cycles = [](const program::Program&) { return 1000; };
  // Pipelines: the model's layers (a pp that does not divide them is refused as the run
  // path refuses it), stage s's one-micro-batch peak, the bytes each further micro-batch in
  // flight adds, and the step's cycles.
  int64_t layers = 3;
  std::function<uint64_t(const RunRequest&, size_t)> stage_peak = [](const RunRequest&, size_t) { return kGiB; };
  uint64_t activation_bytes = 0;
  std::function<uint64_t(const RunRequest&)> pipeline_cycles = [](const RunRequest&) { return 1000; };
  std::set<std::string> simulated;  // "tp/remat/precision" of each simulated Program
  std::set<std::string> pipelines;  // "pp/micro-batches/schedule" of each simulated pipeline
  int compiles = 0;

  PlanEvaluator evaluator() {
    return {[this](const RunRequest& request, const HardwareParams& hw) {
              ++compiles;
              EXPECT_GT(hw.config().hbm().capacity_gib(), 1e5);  // compiled without the HBM bound
              EXPECT_EQ(request.pipeline_parallel, 1);
              return fakeProgram(request, peak(request));
            },
            [this](const program::Program& program, const HardwareParams& hw) {
              EXPECT_EQ(hw.config().hbm().capacity_gib(), 32);  // simulated on the preset as it is
              simulated.insert(std::to_string(program.tensor_parallel()) + "/" + program.model() + "/" +
                               program.precision());
              SimResult result;
              result.total_cycles = cycles(program);
              result.clock_hz = 1e9;
              return result;
            },
            [this](const RunRequest& request, const HardwareParams& hw) {
              ++compiles;
              EXPECT_GT(hw.config().hbm().capacity_gib(), 1e5);
              const int64_t pp = request.pipeline_parallel;
              if (layers % pp != 0) {
                throw Error(ErrorKind::kInvalidConfig, "--pp " + std::to_string(pp) + " does not divide the " +
                                                           std::to_string(layers) + " layers of mlp.onnx");
              }
              CompiledPipeline pipeline;
              pipeline.request = request;
              for (int64_t s = 0; s < pp; ++s) {
                pipeline.stages.push_back(fakeProgram(request, stage_peak(request, static_cast<size_t>(s))));
              }
              return pipeline;
            },
            [this](CompiledPipeline pipeline, const HardwareParams& hw) {
              EXPECT_EQ(hw.config().hbm().capacity_gib(), 32);
              const RunRequest& r = pipeline.request;
              pipelines.insert(std::to_string(r.pipeline_parallel) + "/" + std::to_string(r.micro_batches) + "/" +
                               r.pipeline_schedule);
              // 1F1B holds P - s micro-batches on stage s (at most M), GPipe all M.
              const int64_t p = r.pipeline_parallel, m = r.micro_batches;
              nlohmann::ordered_json stages = nlohmann::ordered_json::array();
              for (int64_t s = 0; s < p; ++s) {
                const int64_t in_flight = r.pipeline_schedule == "gpipe" ? m : std::min(m, p - s);
                stages.push_back(
                    {{"stage", s},
                     {"peak_micro_batches_in_flight", in_flight},
                     {"hbm_peak_bytes", pipeline.stages[static_cast<size_t>(s)].chips(0).memory().peak_bytes() +
                                            static_cast<uint64_t>(in_flight - 1) * activation_bytes}});
              }
              RunOutcome outcome;
              const uint64_t step = pipeline_cycles(r);
              outcome.report["pipeline"] = {{"step_cycles", step},
                                            {"step_time_s", static_cast<double>(step) * 1e-9},
                                            {"bubble", static_cast<double>(p - 1) / static_cast<double>(m + p - 1)},
                                            {"per_stage", stages}};
              outcome.program = std::move(pipeline.stages[0]);
              return outcome;
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

TEST(AutoDistribute, SearchesEveryFactorizationOf64ChipsWithEachPipelineRematAndPrecision) {
  Fake fake;
  fake.layers = 24;  // every default pp divides it
  const AutoDistributeResult result = autoDistribute(mlpOn("4x4x4"), fake.evaluator());
  EXPECT_EQ(result.chips, 64);
  EXPECT_EQ(result.global_batch, 32 * 64);
  EXPECT_EQ(result.dimensions,
            (std::vector<std::string>{"dp", "tp", "pp", "micro_batches", "pipeline_schedule", "remat", "precision"}));
  // 64 = 2^6: tp in {1, 2, ..., 64}, pp in {1, 2, 4, 8} (the divisors up to 8), tp x pp
  // dividing 64: 7 + 6 + 5 + 4 pairs. Each pp > 1 pair x 3 micro-batch counts x 1 schedule;
  // then x 2 remat x 3 precisions: (7 + 15 x 3) x 6 = 312.
  ASSERT_EQ(result.plans.size(), 312u);
  EXPECT_EQ(fake.compiles, 312);
  std::set<std::vector<int64_t>> degrees;
  for (const PlanResult& plan : result.plans) {
    const int64_t dp = plan.plan["dp"], tp = plan.plan["tp"], pp = plan.plan["pp"];
    EXPECT_EQ(dp * tp * pp, 64);
    EXPECT_LE(pp, 8);
    EXPECT_EQ(plan.batch_per_replica, 32 * 64 / dp);  // the same global batch for every plan
    // A plan without a pipeline has no micro-batches or schedule.
    EXPECT_EQ(plan.plan["micro_batches"].is_null(), pp == 1) << plan.label;
    EXPECT_EQ(plan.plan["pipeline_schedule"].is_null(), pp == 1) << plan.label;
    degrees.insert({dp, tp, pp, pp == 1 ? 0 : plan.plan["micro_batches"].get<int64_t>()});
  }
  EXPECT_EQ(degrees.size(), 7u + 15 * 3);
  // Every plan ties at 1000 cycles: ranked in search order, the last dimension fastest.
  EXPECT_EQ(result.plans[0].label, "dp64 tp1 pp1 remat=none float32");
  EXPECT_EQ(result.plans[1].label, "dp64 tp1 pp1 remat=none mixed_bfloat16");
  EXPECT_EQ(result.plans[3].label, "dp64 tp1 pp1 remat=all float32");
  EXPECT_EQ(result.plans[6].label, "dp32 tp1 pp2 mb2 1f1b remat=none float32");
  EXPECT_EQ(result.plans[12].label, "dp32 tp1 pp2 mb4 1f1b remat=none float32");
  EXPECT_EQ(result.plans[311].label, "dp1 tp64 pp1 remat=all mixed_float16");
  EXPECT_EQ(result.plans[0].status, PlanStatus::kBest);
  EXPECT_EQ(result.plans[1].reason, "slower: ties the best (1 us), after it in search order");
  EXPECT_EQ(result.plans[6].reason, "slower: ties the best (1 us, bubble 33%), after it in search order");
  EXPECT_EQ(result.plans[311].rank, 312);
}

TEST(AutoDistribute, ASpaceOfMoreThanMaxPlansIsAnErrorBeforeAnyPlanRuns) {
  Fake fake;
  AutoDistributeRequest request = mlpOn("4x4x4");
  request.max_plans = 311;
  EXPECT_EQ(errorOf([&] { autoDistribute(request, fake.evaluator()); }),
            "the search has 312 plans, more than --max-plans 311: narrow it with --pp-degrees, --micro-batches, "
            "--pipeline-schedules or --precisions, or raise --max-plans");
  EXPECT_EQ(fake.compiles, 0);
  // --pp-degrees 1 leaves the 7 tp degrees x 2 remat x 3 precisions.
  request.pp_degrees = std::vector<int64_t>{1};
  request.max_plans = 42;
  EXPECT_EQ(autoDistribute(request, fake.evaluator()).plans.size(), 42u);
}

TEST(AutoDistribute, APlanAboveTheMemoryLimitIsRejectedWithoutBeingSimulated) {
  Fake fake;
  // 40 GiB / tp without remat, 20 GiB / tp with it.
  fake.peak = [](const RunRequest& r) { return (r.remat == "none" ? 40 : 20) * kGiB / r.tensor_parallel; };
  AutoDistributeRequest request = mlpOn("2x1x1");
  request.memory_limit_gib = 30;
  request.precisions = {"float32"};
  request.pp_degrees = std::vector<int64_t>{1};
  const AutoDistributeResult result = autoDistribute(request, fake.evaluator());
  EXPECT_EQ(result.memory_limit_bytes, 30 * kGiB);
  ASSERT_EQ(result.plans.size(), 4u);
  EXPECT_EQ(fake.compiles, 4);
  // dp2 tp1 remat=none (40 GiB) is compiled but never simulated.
  EXPECT_EQ(fake.simulated, (std::set<std::string>{"1/all/float32", "2/none/float32", "2/all/float32"}));
  const PlanResult& rejected = result.plans.back();
  EXPECT_EQ(rejected.label, "dp2 tp1 pp1 remat=none float32");
  EXPECT_EQ(rejected.status, PlanStatus::kDoesNotFit);
  EXPECT_EQ(rejected.reason, "does not fit: 40 GiB > 30 GiB");
  EXPECT_EQ(*rejected.hbm_peak_bytes, 40 * kGiB);
  EXPECT_FALSE(rejected.step_cycles.has_value());
  EXPECT_EQ(rejected.rank, 0);
  // A limit of exactly the peak fits.
  request.memory_limit_gib = 20;
  const AutoDistributeResult tight = autoDistribute(request, fake.evaluator());
  EXPECT_EQ(tight.plans[0].label, "dp2 tp1 pp1 remat=all float32");
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
  request.pp_degrees = std::vector<int64_t>{1};
  const AutoDistributeResult result = autoDistribute(request, fake.evaluator());
  std::vector<std::string> order;
  for (const PlanResult& plan : result.plans) order.push_back(plan.label + " | " + plan.reason);
  EXPECT_EQ(order, (std::vector<std::string>{
                       "dp1 tp2 pp1 remat=none mixed_bfloat16 | ",
                       "dp1 tp2 pp1 remat=none float32 | slower: ties the best (1 us), after it in search order",
                       "dp1 tp2 pp1 remat=all mixed_bfloat16 | slower: 1.42x the best (1.42 us vs 1 us)",
                       "dp1 tp2 pp1 remat=all float32 | slower: 1.42x the best (1.42 us vs 1 us)",
                       "dp2 tp1 pp1 remat=none mixed_bfloat16 | slower: 2.00x the best (2 us vs 1 us)",
                       "dp2 tp1 pp1 remat=none float32 | slower: 2.00x the best (2 us vs 1 us)",
                       "dp2 tp1 pp1 remat=all mixed_bfloat16 | slower: 2.42x the best (2.42 us vs 1 us)",
                       "dp2 tp1 pp1 remat=all float32 | slower: 2.42x the best (2.42 us vs 1 us)",
                   }));
  EXPECT_EQ(result.best()->label, "dp1 tp2 pp1 remat=none mixed_bfloat16");
  // 1e6 MXU FLOPs in 1 us against tpuv4's 2 x 128 x 128 x 4 x 2 x 1050e6 FLOP/s.
  EXPECT_DOUBLE_EQ(result.plans[0].mxu_utilization, 1e6 / (1e-6 * 2.0 * 128 * 128 * 4 * 2 * 1050e6));
  const nlohmann::ordered_json json = autoDistributeJson(result);
  EXPECT_EQ(json["best"], "dp1 tp2 pp1 remat=none mixed_bfloat16");
  EXPECT_DOUBLE_EQ(json["plans"][4]["slowdown"].get<double>(), 2.0);
  EXPECT_EQ(json["plans"][4]["plan"].dump(),
            R"({"dp":2,"tp":1,"pp":1,"micro_batches":null,"pipeline_schedule":null,"remat":"none",)"
            R"("precision":"mixed_bfloat16"})");
  EXPECT_TRUE(json["plans"][4]["pipeline_bubble"].is_null());
}

TEST(AutoDistribute, ACombinationTheCompilerRefusesIsUnsupportedAndOtherErrorsAreCompileErrors) {
  Fake fake;
  fake.peak = [](const RunRequest& r) -> uint64_t {
    if (r.tensor_parallel == 2 && r.remat == "none") {
      throw Error(ErrorKind::kUnsupported, "pass tensor_parallel: no pair\nsplits");
    }
    if (r.tensor_parallel == 2) throw Error(ErrorKind::kResource, "a row of 9 MiB does not fit VMEM");
    return kGiB;
  };
  AutoDistributeRequest request = mlpOn("2x1x1");
  request.precisions = {"float32"};
  const AutoDistributeResult result = autoDistribute(request, fake.evaluator());
  // tp1 pp1 x 2 remat ranked; then in search order: tp1 pp2 (3 micro-batch counts x 2
  // remat), refused by the run path as the MLP's 3 layers do not split in 2; tp2 pp1 x 2 remat.
  ASSERT_EQ(result.plans.size(), 10u);
  const PlanResult& pipeline = result.plans[2];
  EXPECT_EQ(pipeline.label, "dp1 tp1 pp2 mb2 1f1b remat=none float32");
  EXPECT_EQ(pipeline.status, PlanStatus::kUnsupported);
  EXPECT_EQ(pipeline.reason, "unsupported: --pp 2 does not divide the 3 layers of mlp.onnx");
  EXPECT_EQ(pipeline.rank, 0);
  EXPECT_FALSE(pipeline.hbm_peak_bytes.has_value());
  EXPECT_EQ(result.plans[8].label, "dp1 tp2 pp1 remat=none float32");
  EXPECT_EQ(result.plans[8].status, PlanStatus::kUnsupported);
  EXPECT_EQ(result.plans[8].reason, "unsupported: pass tensor_parallel: no pair splits");  // one line
  EXPECT_EQ(result.plans[9].status, PlanStatus::kCompileError);
  EXPECT_EQ(result.plans[9].reason, "compile: a row of 9 MiB does not fit VMEM");
  EXPECT_EQ(fake.simulated.size(), 2u);
  EXPECT_TRUE(fake.pipelines.empty());
  EXPECT_EQ(autoDistributeJson(result)["plans"][2]["status"], "unsupported");
}

TEST(AutoDistribute, AGlobalBatchThatDoesNotSplitOverDpRejectsThatPlan) {
  Fake fake;
  AutoDistributeRequest request = mlpOn("4x1x1");
  request.base.batch = 2;
  request.precisions = {"float32"};
  request.remats = {"none"};
  request.pp_degrees = std::vector<int64_t>{1};
  const AutoDistributeResult result = autoDistribute(request, fake.evaluator());
  ASSERT_EQ(result.plans.size(), 3u);  // tp 1, 2, 4
  EXPECT_EQ(result.plans[0].label, "dp2 tp2 pp1 remat=none float32");
  EXPECT_EQ(result.plans[2].label, "dp4 tp1 pp1 remat=none float32");
  EXPECT_EQ(result.plans[2].status, PlanStatus::kUnsupported);
  EXPECT_EQ(result.plans[2].reason, "unsupported: the global batch 2 does not split over dp 4");
  EXPECT_EQ(fake.compiles, 2);
}

TEST(AutoDistribute, APipelinePlanWhoseBatchPerReplicaDoesNotDivideIntoItsMicroBatchesIsRejected) {
  Fake fake;
  fake.layers = 2;
  AutoDistributeRequest request = mlpOn("2x1x1");
  request.base.batch = 12;
  request.precisions = {"float32"};
  request.remats = {"none"};
  const AutoDistributeResult result = autoDistribute(request, fake.evaluator());
  // tp1 pp1 (dp 2), tp1 pp2 with 2, 4 and 8 micro-batches (dp 1), tp2 pp1.
  ASSERT_EQ(result.plans.size(), 5u);
  const PlanResult& rejected = result.plans.back();
  EXPECT_EQ(rejected.label, "dp1 tp1 pp2 mb8 1f1b remat=none float32");
  EXPECT_EQ(rejected.status, PlanStatus::kUnsupported);
  EXPECT_EQ(rejected.reason,
            "unsupported: the batch per replica 12 (global 12 / dp 1) does not divide into 8 micro-batches");
  EXPECT_EQ(rejected.batch_per_replica, 12);
  EXPECT_EQ(fake.compiles, 4);  // never compiled
  EXPECT_EQ(fake.pipelines, (std::set<std::string>{"2/2/1f1b", "2/4/1f1b"}));
}

TEST(AutoDistribute, APipelinePlanIsHeldToTheLimitWithItsMicroBatchesInFlightAndLosesByItsBubble) {
  Fake fake;
  fake.layers = 2;
  // Stage 1 needs 31 GiB for one micro-batch when there are 2, 20 GiB otherwise; each
  // further micro-batch in flight adds 4 GiB.
  fake.stage_peak = [](const RunRequest& r, size_t s) { return (s == 1 && r.micro_batches == 2 ? 31 : 20) * kGiB; };
  fake.activation_bytes = 4 * kGiB;
  fake.pipeline_cycles = [](const RunRequest&) { return 2000; };
  AutoDistributeRequest request = mlpOn("2x1x1");
  request.memory_limit_gib = 30;
  request.precisions = {"float32"};
  request.remats = {"none"};
  request.micro_batches = {2, 4};
  request.pipeline_schedules = {"1f1b", "gpipe"};
  const AutoDistributeResult result = autoDistribute(request, fake.evaluator());
  std::vector<std::string> order;
  for (const PlanResult& plan : result.plans) order.push_back(plan.label + " | " + plan.reason);
  EXPECT_EQ(order, (std::vector<std::string>{
                       "dp2 tp1 pp1 remat=none float32 | ",
                       "dp1 tp2 pp1 remat=none float32 | slower: ties the best (1 us), after it in search order",
                       // 1F1B holds 2 micro-batches on stage 0: 20 + 4 GiB; bubble (2 - 1) / (4 + 2 - 1).
                       "dp1 tp1 pp2 mb4 1f1b remat=none float32 | slower: 2.00x the best (2 us vs 1 us, bubble 20%)",
                       "dp1 tp1 pp2 mb2 1f1b remat=none float32 | does not fit: 31 GiB > 30 GiB (stage 1, one "
                       "micro-batch)",
                       "dp1 tp1 pp2 mb2 gpipe remat=none float32 | does not fit: 31 GiB > 30 GiB (stage 1, one "
                       "micro-batch)",
                       // GPipe holds all 4: 20 + 3 x 4 GiB.
                       "dp1 tp1 pp2 mb4 gpipe remat=none float32 | does not fit: 32 GiB > 30 GiB (stage 0 with 4 "
                       "micro-batches in flight)",
                   }));
  // The one-micro-batch plans above the limit are never simulated.
  EXPECT_EQ(fake.pipelines, (std::set<std::string>{"2/4/1f1b", "2/4/gpipe"}));
  EXPECT_EQ(*result.plans[2].hbm_peak_bytes, 24 * kGiB);
  EXPECT_EQ(*result.plans[5].hbm_peak_bytes, 32 * kGiB);
  EXPECT_FALSE(result.plans[5].step_cycles.has_value());
  // Chip 0 runs stage 0's 1e6 MXU FLOPs for each of 4 micro-batches in 2 us.
  EXPECT_DOUBLE_EQ(result.plans[2].mxu_utilization, 4e6 / (2e-6 * 2.0 * 128 * 128 * 4 * 2 * 1050e6));
  const nlohmann::ordered_json json = autoDistributeJson(result);
  EXPECT_DOUBLE_EQ(json["plans"][2]["pipeline_bubble"].get<double>(), 0.2);
  EXPECT_EQ(json["plans"][2]["plan"]["micro_batches"], 4);
  EXPECT_EQ(json["plans"][2]["plan"]["pipeline_schedule"], "1f1b");
  EXPECT_TRUE(json["plans"][5]["pipeline_bubble"].is_null());
  EXPECT_NE(autoDistributeCsv(result).find("\n3,dp1 tp1 pp2 mb4 1f1b remat=none float32,1,1,2,4,1f1b,none,float32,64,"
                                           "slower,2000,2e-06,"),
            std::string::npos);
  // A faster pipeline is the best, its bubble in the table's verdict.
  fake.pipeline_cycles = [](const RunRequest&) { return 500; };
  const AutoDistributeResult faster = autoDistribute(request, fake.evaluator());
  EXPECT_EQ(faster.best()->label, "dp1 tp1 pp2 mb4 1f1b remat=none float32");
  EXPECT_EQ(faster.plans[1].reason, "slower: 2.00x the best (1 us vs 500 ns)");
  EXPECT_NE(autoDistributeTable(faster).find("best (bubble 20%)\n"), std::string::npos);
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
  request.base.micro_batches = 4;
  EXPECT_NE(errorOf([&] { search(request); }).find("--micro-batches, --pipeline-schedule,"), std::string::npos);
  request = mlpOn("2x1x1");
  request.base.model_path = std::string(TPUSIM_SOURCE_DIR) + "/traces/missing.onnx";
  EXPECT_EQ(errorOf([&] { search(request); }, ErrorKind::kInvalidInput),
            "model file '" + request.base.model_path + "' does not exist");
  // The pipeline's values.
  const auto pipelineError = [&](const std::function<void(AutoDistributeRequest&)>& set) {
    AutoDistributeRequest bad = mlpOn("2x2x1");
    set(bad);
    return errorOf([&] { search(bad); });
  };
  using R = AutoDistributeRequest;
  EXPECT_EQ(pipelineError([](R& r) { r.pp_degrees = std::vector<int64_t>{1, 0}; }), "--pp-degrees must be >= 1, not 0");
  EXPECT_EQ(pipelineError([](R& r) { r.pp_degrees = std::vector<int64_t>{-2}; }), "--pp-degrees must be >= 1, not -2");
  EXPECT_EQ(pipelineError([](R& r) { r.pp_degrees = std::vector<int64_t>{3}; }),
            "--pp-degrees 3 does not divide the 4 chips of 2x2x1");
  EXPECT_EQ(pipelineError([](R& r) { r.pp_degrees = std::vector<int64_t>{2, 2}; }), "--pp-degrees lists 2 twice");
  EXPECT_EQ(pipelineError([](R& r) { r.pp_degrees = std::vector<int64_t>{}; }),
            "--pp-degrees needs at least one value");
  EXPECT_EQ(pipelineError([](R& r) { r.micro_batches = {4, 0}; }), "--micro-batches must be >= 1, not 0");
  EXPECT_EQ(pipelineError([](R& r) { r.micro_batches = {}; }), "--micro-batches needs at least one value");
  EXPECT_EQ(pipelineError([](R& r) {
              r.pipeline_schedules = {"1f1b", "zero_bubble"};
            }),
            "unknown pipeline schedule 'zero_bubble' (choose gpipe or 1f1b)");
  EXPECT_EQ(pipelineError([](R& r) {
              r.pipeline_schedules = {"gpipe", "gpipe"};
            }),
            "--pipeline-schedules lists gpipe twice");
  EXPECT_EQ(pipelineError([](R& r) { r.max_plans = 0; }), "--max-plans must be >= 1");
  EXPECT_EQ(fake.compiles, 0);
}

TEST(AutoDistribute, AModelThatNoPlanCompilesIsOneError) {
  Fake fake;
  fake.peak = [](const RunRequest&) -> uint64_t { throw Error(ErrorKind::kUnsupported, "no such op"); };
  AutoDistributeRequest request = mlpOn("2x1x1");
  request.precisions = {"float32"};
  EXPECT_EQ(errorOf([&] { autoDistribute(request, fake.evaluator()); }),
            "no plan of mlp.onnx compiles on 2x1x1 (dp2 tp1 pp1 remat=none float32: unsupported: no such op; dp1 "
            "tp1 pp2 mb2 1f1b remat=none float32: unsupported: --pp 2 does not divide the 3 layers of mlp.onnx)");
}

// The real compiler and simulator: each simulated plan is the run of the same options.
// On 3 chips the MLP's 3 layers make 3 stages; it has no matmul pair that splits 3 ways.
TEST(AutoDistribute, ASimulatedPlanIsTheRunOfItsOptions) {
  AutoDistributeRequest request = mlpOn("3x1x1");
  request.precisions = {"float32"};
  request.remats = {"none"};
  request.micro_batches = {4};
  const AutoDistributeResult result = autoDistribute(request);
  ASSERT_EQ(result.plans.size(), 3u);  // dp3, dp1 pp3 mb4, dp1 tp3
  for (const PlanResult& plan : result.plans) {
    if (plan.plan["tp"] == 3) {
      EXPECT_EQ(plan.status, PlanStatus::kUnsupported);
      EXPECT_EQ(plan.reason.rfind("unsupported: pass tensor_parallel: tensor parallel over 3 chips", 0), 0u)
          << plan.reason;
      continue;
    }
    ASSERT_GT(plan.rank, 0) << plan.reason;
    RunRequest run = request.base;
    run.topology = "3x1x1";
    run.pipeline_parallel = plan.plan["pp"];
    if (run.pipeline_parallel > 1) run.micro_batches = plan.plan["micro_batches"];
    run.batch = plan.batch_per_replica;
    run.instruction_timeline = false;
    const RunOutcome outcome = runRequest(run);
    if (run.pipeline_parallel == 1) {
      EXPECT_EQ(*plan.step_cycles, outcome.report["total_cycles"].get<uint64_t>()) << plan.label;
      EXPECT_EQ(*plan.hbm_peak_bytes, outcome.report["memory"]["peak_bytes"].get<uint64_t>()) << plan.label;
      EXPECT_FALSE(plan.pipeline_bubble.has_value());
      continue;
    }
    const nlohmann::ordered_json& pipeline = outcome.report["pipeline"];
    EXPECT_EQ(plan.batch_per_replica, 96);
    EXPECT_EQ(*plan.step_cycles, pipeline["step_cycles"].get<uint64_t>()) << plan.label;
    EXPECT_DOUBLE_EQ(*plan.pipeline_bubble, pipeline["bubble"].get<double>());
    uint64_t peak = 0;
    for (const auto& stage : pipeline["per_stage"]) peak = std::max(peak, stage["hbm_peak_bytes"].get<uint64_t>());
    EXPECT_EQ(*plan.hbm_peak_bytes, peak) << plan.label;
  }
  // Deterministic: a second search gives the same JSON.
  EXPECT_EQ(autoDistributeJson(autoDistribute(request)).dump(), autoDistributeJson(result).dump());
}

// The plans spread over worker processes (api/case_runner.hpp) come back whole: the same
// JSON, CSV and table, to the last bit of every double, as the search in one process.
TEST(AutoDistribute, PlansSpreadOverWorkerProcessesGiveTheSameResult) {
  Fake fake;
  fake.layers = 24;
  // Cycles that are not round, so the times and utilizations are doubles with every bit used.
  fake.cycles = [](const program::Program& p) {
    return 1000 + 7919 * p.tensor_parallel() + (p.precision() == "float32" ? 333 : 17) + p.model().size();
  };
  fake.pipeline_cycles = [](const RunRequest& r) {
    return 999 + 101 * static_cast<uint64_t>(r.pipeline_parallel * r.micro_batches);
  };
  AutoDistributeRequest request = mlpOn("2x2x1");
  const AutoDistributeResult one = autoDistribute(request, fake.evaluator());
  std::vector<size_t> told;
  const std::optional<AutoDistributeResult> three = autoDistributeOn(
      LocalCaseRunner(3), request, fake.evaluator(), [&](const PlanResult&, size_t index, size_t total) {
        EXPECT_EQ(total, one.plans.size());
        told.push_back(index);
      });
  ASSERT_TRUE(three.has_value());
  EXPECT_EQ(told.size(), one.plans.size());
  EXPECT_EQ(autoDistributeJson(*three).dump(), autoDistributeJson(one).dump());
  EXPECT_EQ(autoDistributeCsv(*three), autoDistributeCsv(one));
  EXPECT_EQ(autoDistributeTable(*three), autoDistributeTable(one));
}

// A runner that gathers nowhere here (an MPI rank other than 0) gives no result.
TEST(AutoDistribute, ARankThatDoesNotGatherGetsNoResult) {
  struct OtherRank : CaseRunner {
    std::optional<std::vector<std::string>> run(size_t count, const CaseFunction& run_case,
                                                const CaseDone&) const override {
      for (size_t i = 1; i < count; i += 2) run_case(i);  // its share, sent elsewhere
      return std::nullopt;
    }
    std::string describe() const override { return "rank 1 of 2"; }
  };
  Fake fake;
  EXPECT_FALSE(autoDistributeOn(OtherRank(), mlpOn("2x1x1"), fake.evaluator()).has_value());
  EXPECT_GT(fake.compiles, 0);
}

}  // namespace
}  // namespace tpusim
