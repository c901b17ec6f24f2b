// AutoDistribute (`tpusim autodistribute`, docs/strategies.md "AutoDistribute"): given a
// model, an ICI slice and a memory limit, try every plan of the search space by compiling
// and simulating it, and rank them. A plan that does not fit the limit is rejected from
// its compiled memory plan, before it is simulated (a pipeline plan also after, once its
// schedule says how many micro-batches each stage holds); one the run path refuses
// (an unsupported or invalid combination) or that does not compile is rejected with its
// one-line error; the rest are simulated (one step each) and ranked by step time.
//
// The space is a list of dimensions (planDimensions): the tensor-parallel degree (every
// divisor of the slice's chips), the pipeline degree (the data-parallel degree is what
// the two leave), with a pipeline the micro-batches and the schedule, activation
// rematerialization and the precision policy.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/case_runner.hpp"
#include "api/pipeline_run.hpp"
#include "api/session.hpp"
#include "sim/chip/driver.hpp"

namespace tpusim {

struct AutoDistributeRequest {
  // The model, preset, overrides and training options; `topology` is the slice searched
  // (required) and `batch` the global batch (default kDefaultBatchPerChip x chips), split
  // over the data-parallel replicas, so every plan trains the same examples per step.
  // Its degrees, remat and precision are the search's and must be left at their defaults.
  RunRequest base;
  std::optional<double> memory_limit_gib;  // per chip; default the preset's hbm.capacity_gib
  std::vector<std::string> precisions = {"float32", "mixed_bfloat16", "mixed_float16"};
  std::vector<std::string> remats = {"none", "all"};
  // Pipeline degrees; default every divisor of the chips up to kMaxDefaultPipelineDegree.
  std::optional<std::vector<int64_t>> pp_degrees;
  std::vector<int64_t> micro_batches = {2, 4, 8};          // of the plans with pp > 1
  std::vector<std::string> pipeline_schedules = {"1f1b"};  // of the plans with pp > 1
  int64_t max_plans = 512;                                 // a larger space is an error before any plan runs
};

inline constexpr int64_t kDefaultBatchPerChip = 32;
inline constexpr int64_t kMaxDefaultPipelineDegree = 8;

// One dimension of the plan space: its name (the plan's key in autodistribute.json), what
// a value is prefixed with in a plan's label ("tp" for tp4, "" for a precision's name), its
// values in search order, and how a value sets a run request. `applies`, when set, says
// whether a plan (the earlier dimensions' values applied) has a value of this dimension
// at all; one that has none (the micro-batches of a plan without a pipeline) is null.
struct PlanDimension {
  std::string name;
  std::string label_prefix;
  std::vector<nlohmann::json> values;
  std::function<void(RunRequest&, const nlohmann::json&)> apply;
  std::function<bool(const RunRequest&)> applies;
};

// The dimensions searched on `chips` chips, in order (the last varies fastest).
std::vector<PlanDimension> planDimensions(const AutoDistributeRequest& request, int64_t chips);

enum class PlanStatus { kBest, kSlower, kDoesNotFit, kUnsupported, kCompileError, kSimulateError };
// "best", "slower", "does_not_fit", "unsupported", "compile_error", "simulate_error"
const char* planStatusName(PlanStatus status);

struct PlanResult {
  nlohmann::ordered_json plan;  // {"dp": D, then each dimension's value by name}
  std::string label;            // "dp16 tp4 remat=none mixed_bfloat16"
  int64_t batch_per_replica = 0;
  PlanStatus status = PlanStatus::kCompileError;
  std::string reason;                      // why it lost; empty for the best
  std::optional<uint64_t> hbm_peak_bytes;  // per chip, from the compiled memory plan
  std::optional<uint64_t> step_cycles;     // simulated plans only
  double step_time_s = 0;
  double mxu_utilization = 0;             // chip 0's MXU FLOPs (recomputed ones too) / (step time x MXU peak)
  std::optional<double> pipeline_bubble;  // simulated pipeline plans: the pipeline section's bubble
  int rank = 0;                           // 1 for the best, 2, ... for the other simulated plans; 0 rejected
};

struct AutoDistributeResult {
  std::string model, hw, topology;
  int64_t chips = 0;
  int64_t global_batch = 0;
  uint64_t memory_limit_bytes = 0;
  uint64_t hbm_capacity_bytes = 0;
  std::vector<std::string> dimensions;  // names, "dp" first
  // Ranked: simulated plans by step cycles (ties in search order), then the rejected ones
  // in search order.
  std::vector<PlanResult> plans;
  const PlanResult* best() const;  // null when nothing ran
};

// How a plan is compiled and simulated; tests substitute their own. A plan with pp > 1
// runs as `tpusim run --pp` does: its stages compiled, then simulated and scheduled, the
// outcome's `pipeline` section read (step, bubble, per-stage HBM peaks) and its Program
// (stage 0's) for chip 0's MXU FLOPs.
struct PlanEvaluator {
  std::function<program::Program(const RunRequest&, const HardwareParams&)> compile;
  std::function<SimResult(const program::Program&, const HardwareParams&)> simulate;
  std::function<CompiledPipeline(const RunRequest&, const HardwareParams&)> compile_pipeline;
  std::function<RunOutcome(CompiledPipeline, const HardwareParams&)> simulate_pipeline;
};
// compileRequest and simulate; compilePipeline and simulatePipeline (api/pipeline_run.hpp).
PlanEvaluator simulatingEvaluator();

// Called after each plan is evaluated (index from 0 in search order, of `total`).
using PlanProgress = std::function<void(const PlanResult& plan, size_t index, size_t total)>;

// Bad inputs are one-line errors before any plan runs: no or a bad topology, an HLO
// module or saved Program, a memory limit <= 0 or above the preset's HBM, an unknown
// precision, remat or pipeline schedule, a pipeline degree < 1 or not dividing the chips,
// micro-batches < 1, a value listed twice, a batch <= 0, max_plans < 1 or a space of more
// plans than it, degrees, micro-batches, schedule, remat or precision set in `base`.
AutoDistributeResult autoDistribute(const AutoDistributeRequest& request,
                                    const PlanEvaluator& evaluator = simulatingEvaluator(),
                                    const PlanProgress& progress = nullptr);
// The same search with its plans spread by `runner` (worker processes, MPI ranks:
// api/case_runner.hpp); `progress` hears of the plans this process's runner finishes.
// Returns the result in the process that gathers the plans, nothing in the others. Each
// plan's outcome crosses processes whole (doubles as their bits), so the result, and the
// files written from it, are the same for every spread.
std::optional<AutoDistributeResult> autoDistributeOn(const CaseRunner& runner, const AutoDistributeRequest& request,
                                                     const PlanEvaluator& evaluator = simulatingEvaluator(),
                                                     const PlanProgress& progress = nullptr);

// autodistribute.json (docs/strategies.md, "autodistribute.json") and its CSV.
nlohmann::ordered_json autoDistributeJson(const AutoDistributeResult& result);
std::string autoDistributeCsv(const AutoDistributeResult& result);
// Writes DIR/autodistribute.json and DIR/autodistribute.csv (creating DIR); returns the JSON's path.
std::string writeAutoDistributeFiles(const AutoDistributeResult& result, const std::string& dir);
// The ranked table the CLI prints.
std::string autoDistributeTable(const AutoDistributeResult& result);

}  // namespace tpusim
