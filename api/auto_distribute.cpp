#include "api/auto_distribute.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "api/parallel_degrees.hpp"
#include "api/plan_text.hpp"
#include "frontend/import/hlo_import.hpp"
#include "frontend/program_io.hpp"
#include "frontend/train/precision_policy.hpp"
#include "frontend/train/training_graph.hpp"
#include "report/peaks_section.hpp"
#include "report/text_format.hpp"
#include "sim/common/error.hpp"
#include "sim/pipeline/pipeline_schedule.hpp"

namespace tpusim {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// Plans are compiled on a copy of the preset with this much HBM, so that a plan above
// the limit still yields its memory plan (its peak) instead of the lowering's error.
constexpr const char* kUnboundedCapacityGib = "1048576";

std::vector<int64_t> divisorsOf(int64_t n) {
  std::vector<int64_t> divisors;
  for (int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) divisors.push_back(d);
  }
  return divisors;
}

// A searched list: not empty, no value twice.
template <typename T>
void checkList(const std::string& flag, const std::vector<T>& values) {
  if (values.empty()) throw Error(ErrorKind::kInvalidConfig, flag + " needs at least one value");
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::find(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(i), values[i]) !=
        values.begin() + static_cast<std::ptrdiff_t>(i)) {
      throw Error(ErrorKind::kInvalidConfig, flag + " lists " + plan_text::value(values[i]) + " twice");
    }
  }
}

// The checks every plan would fail the same way, before any plan runs.
void checkRequest(const AutoDistributeRequest& request) {
  const RunRequest& base = request.base;
  if (base.topology.empty()) {
    throw Error(ErrorKind::kInvalidConfig, "autodistribute needs --topology, the slice to distribute over");
  }
  if (!std::filesystem::exists(base.model_path)) {
    throw Error(ErrorKind::kInvalidInput, "model file '" + base.model_path + "' does not exist");
  }
  if (isProgramPath(base.model_path) || isHloPath(base.model_path)) {
    throw Error(ErrorKind::kUnsupported, "autodistribute compiles an ONNX model; " + base.model_path +
                                             " runs as it was compiled or written, on one slice layout");
  }
  if (base.mode && *base.mode != "training") {
    throw Error(ErrorKind::kInvalidConfig, "autodistribute searches training steps, not --mode " + *base.mode);
  }
  if (base.data_parallel != 0 || base.tensor_parallel != 1 || base.pipeline_parallel != 1 || base.micro_batches != 1 ||
      base.pipeline_schedule != "1f1b" || base.remat != "none" || base.precision != "float32" ||
      !base.strategy.empty() || !base.precision_schedule.empty()) {
    throw Error(ErrorKind::kInvalidConfig,
                "autodistribute chooses the degrees, micro-batches, schedule, remat and precision itself; leave --dp, "
                "--tp, --pp, --micro-batches, --pipeline-schedule, --remat, --precision, --precision-schedule and "
                "--strategy out");
  }
  if (base.batch && *base.batch <= 0) throw Error(ErrorKind::kInvalidConfig, "--batch must be > 0");
  if (request.memory_limit_gib && !(*request.memory_limit_gib > 0 && std::isfinite(*request.memory_limit_gib))) {
    throw Error(ErrorKind::kInvalidConfig, "--memory-limit-gib must be > 0");
  }
  if (request.precisions.empty()) throw Error(ErrorKind::kInvalidConfig, "--precisions needs at least one policy");
  for (const std::string& name : request.precisions) parsePrecisionPolicy(name);
  if (request.remats.empty()) throw Error(ErrorKind::kInvalidConfig, "autodistribute needs at least one remat value");
  for (const std::string& name : request.remats) parseRemat(name);
  checkList("--pipeline-schedules", request.pipeline_schedules);
  for (const std::string& name : request.pipeline_schedules) pipelineScheduleFromName(name);
  checkList("--micro-batches", request.micro_batches);
  for (int64_t m : request.micro_batches) {
    if (m < 1) throw Error(ErrorKind::kInvalidConfig, "--micro-batches must be >= 1, not " + std::to_string(m));
  }
  if (request.pp_degrees) checkList("--pp-degrees", *request.pp_degrees);
  if (request.max_plans < 1) throw Error(ErrorKind::kInvalidConfig, "--max-plans must be >= 1");
}

// Pipeline degrees once the slice is known: each >= 1 and a divisor of its chips.
void checkPipelineDegrees(const AutoDistributeRequest& request, const Topology& slice) {
  if (!request.pp_degrees) return;
  for (int64_t pp : *request.pp_degrees) {
    if (pp < 1) throw Error(ErrorKind::kInvalidConfig, "--pp-degrees must be >= 1, not " + std::to_string(pp));
    if (slice.numChips() % pp != 0) {
      throw Error(ErrorKind::kInvalidConfig, "--pp-degrees " + std::to_string(pp) + " does not divide the " +
                                                 std::to_string(slice.numChips()) + " chips of " + slice.shapeString());
    }
  }
}

struct Candidate {
  PlanResult result;
  RunRequest request;
  size_t index = 0;  // in search order
};

// The plan of the dimensions' `values` (null where a dimension does not apply), or none
// when its degrees do not factor the slice. Its batch must split over dp, and with a
// pipeline that share over the micro-batches; otherwise it is rejected here.
std::optional<Candidate> planOf(const RunRequest& request, const std::vector<PlanDimension>& dims,
                                const std::vector<nlohmann::json>& values, const Topology& slice,
                                int64_t global_batch) {
  std::optional<ParallelDegrees> degrees;
  try {
    degrees = parallelDegreesOf(request, slice);
  } catch (const Error&) {
    return std::nullopt;  // not a factorization of the slice: not a plan
  }
  Candidate candidate;
  candidate.request = request;
  PlanResult& plan = candidate.result;
  plan.plan["dp"] = degrees->dp;
  plan.label = "dp" + std::to_string(degrees->dp);
  for (size_t d = 0; d < dims.size(); ++d) {
    plan.plan[dims[d].name] = values[d];
    if (!values[d].is_null()) plan.label += " " + dims[d].label_prefix + plan_text::value(values[d]);
  }
  if (global_batch % degrees->dp != 0) {
    plan.status = PlanStatus::kUnsupported;
    plan.reason = "unsupported: the global batch " + std::to_string(global_batch) + " does not split over dp " +
                  std::to_string(degrees->dp);
    return candidate;
  }
  plan.batch_per_replica = global_batch / degrees->dp;
  candidate.request.batch = plan.batch_per_replica;
  if (degrees->pp > 1 && plan.batch_per_replica % request.micro_batches != 0) {
    plan.status = PlanStatus::kUnsupported;
    plan.reason = "unsupported: the batch per replica " + std::to_string(plan.batch_per_replica) + " (global " +
                  std::to_string(global_batch) + " / dp " + std::to_string(degrees->dp) + ") does not divide into " +
                  std::to_string(request.micro_batches) + " micro-batches";
  }
  return candidate;
}

// Every plan of the space in search order: the product of the dimensions' values, the
// last varying fastest, a dimension that does not apply to a plan taking no value.
void addPlans(const std::vector<PlanDimension>& dims, size_t d, const RunRequest& request,
              std::vector<nlohmann::json>& values, const Topology& slice, int64_t global_batch,
              std::vector<Candidate>& plans) {
  if (d == dims.size()) {
    std::optional<Candidate> candidate = planOf(request, dims, values, slice, global_batch);
    if (!candidate) return;
    candidate->index = plans.size();
    plans.push_back(std::move(*candidate));
    return;
  }
  const PlanDimension& dim = dims[d];
  if (dim.applies && !dim.applies(request)) {
    values.push_back(nullptr);
    addPlans(dims, d + 1, request, values, slice, global_batch, plans);
    values.pop_back();
    return;
  }
  for (const nlohmann::json& value : dim.values) {
    RunRequest next = request;
    dim.apply(next, value);
    values.push_back(value);
    addPlans(dims, d + 1, next, values, slice, global_batch, plans);
    values.pop_back();
  }
}

std::vector<Candidate> enumeratePlans(const AutoDistributeRequest& request, const std::vector<PlanDimension>& dims,
                                      const Topology& slice, int64_t global_batch) {
  std::vector<Candidate> plans;
  std::vector<nlohmann::json> values;
  RunRequest base = request.base;
  base.data_parallel = 0;
  addPlans(dims, 0, base, values, slice, global_batch, plans);
  return plans;
}

std::string oneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

// Chip 0's MXU FLOPs, `runs` times its Program's, over (seconds x the preset's MXU peak).
double mxuUtilization(const program::Program& program, uint64_t runs, double seconds, const HardwareParams& hw) {
  uint64_t flops = 0;
  for (const program::Instruction& ins : program.chips(0).instructions()) {
    if (ins.unit() == program::MXU) flops += ins.flops();
  }
  const double peak = peaksSection(hw).at("mxu_flops_per_s").get<double>();
  return seconds > 0 && peak > 0 ? static_cast<double>(flops * runs) / (seconds * peak) : 0.0;
}

// A compiler's error: a combination it refuses (kUnsupported, kInvalidConfig) makes the
// plan unsupported; any other is a compile error.
void rejectCompile(PlanResult& plan, const Error& error) {
  const bool refused = error.kind() == ErrorKind::kUnsupported || error.kind() == ErrorKind::kInvalidConfig;
  plan.status = refused ? PlanStatus::kUnsupported : PlanStatus::kCompileError;
  plan.reason = (refused ? "unsupported: " : "compile: ") + oneLine(error.what());
}

std::string doesNotFit(uint64_t peak, uint64_t limit) {
  return "does not fit: " + plan_text::bytes(peak) + " > " + plan_text::bytes(limit);
}

// The stage with the largest of `peaks` (the first on ties).
size_t largest(const std::vector<uint64_t>& peaks) {
  return static_cast<size_t>(std::max_element(peaks.begin(), peaks.end()) - peaks.begin());
}

// A pipeline plan: its stages compiled on unbounded HBM; rejected without simulating if a
// stage's one-micro-batch plan is above the limit; simulated and scheduled; then held to
// the limit with each stage's micro-batches in flight.
void evaluatePipeline(Candidate& candidate, const PlanEvaluator& evaluator, const HardwareParams& hw,
                      const HardwareParams& unbounded, uint64_t limit_bytes) {
  PlanResult& plan = candidate.result;
  CompiledPipeline compiled;
  try {
    compiled = evaluator.compile_pipeline(candidate.request, unbounded);
  } catch (const Error& error) {
    rejectCompile(plan, error);
    return;
  }
  std::vector<uint64_t> one_micro_batch;
  for (const program::Program& stage : compiled.stages) one_micro_batch.push_back(stage.chips(0).memory().peak_bytes());
  const size_t first = largest(one_micro_batch);
  plan.hbm_peak_bytes = one_micro_batch[first];
  if (*plan.hbm_peak_bytes > limit_bytes) {
    plan.status = PlanStatus::kDoesNotFit;
    plan.reason =
        doesNotFit(*plan.hbm_peak_bytes, limit_bytes) + " (stage " + std::to_string(first) + ", one micro-batch)";
    return;
  }
  RunOutcome outcome;
  try {
    outcome = evaluator.simulate_pipeline(std::move(compiled), hw);
  } catch (const Error& error) {
    plan.status = PlanStatus::kSimulateError;
    plan.reason = "simulate: " + oneLine(error.what());
    return;
  }
  const nlohmann::ordered_json& section = outcome.report.at("pipeline");
  std::vector<uint64_t> peaks;
  for (const auto& stage : section.at("per_stage")) peaks.push_back(stage.at("hbm_peak_bytes").get<uint64_t>());
  const size_t worst = largest(peaks);
  plan.hbm_peak_bytes = peaks[worst];
  if (*plan.hbm_peak_bytes > limit_bytes) {
    const auto in_flight = section.at("per_stage")[worst].at("peak_micro_batches_in_flight").get<uint64_t>();
    plan.status = PlanStatus::kDoesNotFit;
    plan.reason = doesNotFit(*plan.hbm_peak_bytes, limit_bytes) + " (stage " + std::to_string(worst) + " with " +
                  std::to_string(in_flight) + " micro-batches in flight)";
    return;
  }
  plan.step_cycles = section.at("step_cycles").get<uint64_t>();
  plan.step_time_s = section.at("step_time_s").get<double>();
  plan.pipeline_bubble = section.at("bubble").get<double>();
  // Chip 0 runs stage 0's one-micro-batch Program once per micro-batch.
  plan.mxu_utilization =
      mxuUtilization(outcome.program, static_cast<uint64_t>(candidate.request.micro_batches), plan.step_time_s, hw);
  plan.status = PlanStatus::kSlower;  // until ranked
}

// Compiles the plan, checks its peak against the limit, and simulates it if it fits.
void evaluate(Candidate& candidate, const PlanEvaluator& evaluator, const HardwareParams& hw,
              const HardwareParams& unbounded, uint64_t limit_bytes) {
  PlanResult& plan = candidate.result;
  if (!plan.reason.empty()) return;  // rejected while enumerating
  if (candidate.request.pipeline_parallel > 1) {
    evaluatePipeline(candidate, evaluator, hw, unbounded, limit_bytes);
    return;
  }
  program::Program program;
  try {
    program = evaluator.compile(candidate.request, unbounded);
  } catch (const Error& error) {
    rejectCompile(plan, error);
    return;
  }
  plan.hbm_peak_bytes = program.chips(0).memory().peak_bytes();
  if (*plan.hbm_peak_bytes > limit_bytes) {
    plan.status = PlanStatus::kDoesNotFit;
    plan.reason = doesNotFit(*plan.hbm_peak_bytes, limit_bytes);
    return;
  }
  try {
    const SimResult sim = evaluator.simulate(program, hw);
    plan.step_cycles = sim.total_cycles;
    plan.step_time_s = static_cast<double>(sim.total_cycles) / sim.clock_hz;
    plan.mxu_utilization = mxuUtilization(program, 1, plan.step_time_s, hw);
    plan.status = PlanStatus::kSlower;  // until ranked
  } catch (const Error& error) {
    plan.status = PlanStatus::kSimulateError;
    plan.reason = "simulate: " + oneLine(error.what());
  }
}

// What evaluate() found of a plan, as text that crosses processes unchanged: the doubles
// as their bits, so that the gathered plan is the evaluated one to the last bit.
std::string outcomeText(const PlanResult& plan) {
  nlohmann::json json;
  const auto bits = [](double value) { return std::bit_cast<uint64_t>(value); };
  json["status"] = static_cast<int>(plan.status);
  json["reason"] = plan.reason;
  json["hbm_peak_bytes"] = plan.hbm_peak_bytes ? nlohmann::json(*plan.hbm_peak_bytes) : nlohmann::json();
  json["step_cycles"] = plan.step_cycles ? nlohmann::json(*plan.step_cycles) : nlohmann::json();
  json["step_time_s"] = bits(plan.step_time_s);
  json["mxu_utilization"] = bits(plan.mxu_utilization);
  json["pipeline_bubble"] = plan.pipeline_bubble ? nlohmann::json(bits(*plan.pipeline_bubble)) : nlohmann::json();
  return json.dump();
}

void readOutcome(const std::string& text, PlanResult& plan) {
  const nlohmann::json json = nlohmann::json::parse(text);
  const auto real = [](const nlohmann::json& bits) { return std::bit_cast<double>(bits.get<uint64_t>()); };
  plan.status = static_cast<PlanStatus>(json.at("status").get<int>());
  plan.reason = json.at("reason").get<std::string>();
  const nlohmann::json& peak = json.at("hbm_peak_bytes");
  plan.hbm_peak_bytes = peak.is_null() ? std::nullopt : std::optional<uint64_t>(peak.get<uint64_t>());
  const nlohmann::json& cycles = json.at("step_cycles");
  plan.step_cycles = cycles.is_null() ? std::nullopt : std::optional<uint64_t>(cycles.get<uint64_t>());
  plan.step_time_s = real(json.at("step_time_s"));
  plan.mxu_utilization = real(json.at("mxu_utilization"));
  const nlohmann::json& bubble = json.at("pipeline_bubble");
  plan.pipeline_bubble = bubble.is_null() ? std::nullopt : std::optional<double>(real(bubble));
}

// Simulated plans by step cycles (ties in search order), then the rejected ones in search
// order; each simulated plan but the best gets how much slower it is.
std::vector<PlanResult> rank(std::vector<Candidate> candidates) {
  std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    const bool ran_a = a.result.step_cycles.has_value() && a.result.reason.empty();
    const bool ran_b = b.result.step_cycles.has_value() && b.result.reason.empty();
    if (ran_a != ran_b) return ran_a;
    if (ran_a && *a.result.step_cycles != *b.result.step_cycles) return *a.result.step_cycles < *b.result.step_cycles;
    return a.index < b.index;
  });
  std::vector<PlanResult> ranked;
  for (Candidate& candidate : candidates) ranked.push_back(std::move(candidate.result));
  if (ranked.empty() || ranked[0].status != PlanStatus::kSlower || !ranked[0].reason.empty()) return ranked;
  const PlanResult& best = ranked[0];
  for (size_t i = 0; i < ranked.size() && ranked[i].status == PlanStatus::kSlower && ranked[i].reason.empty(); ++i) {
    PlanResult& plan = ranked[i];
    plan.rank = static_cast<int>(i) + 1;
    if (i == 0) {
      plan.status = PlanStatus::kBest;
      continue;
    }
    const double ratio = static_cast<double>(*plan.step_cycles) / static_cast<double>(*best.step_cycles);
    const std::string bubble = plan.pipeline_bubble ? ", " + plan_text::bubble(*plan.pipeline_bubble) : "";
    char text[200];
    if (*plan.step_cycles == *best.step_cycles) {
      std::snprintf(text, sizeof(text), "slower: ties the best (%s%s), after it in search order",
                    plan_text::time(plan.step_time_s).c_str(), bubble.c_str());
    } else {
      std::snprintf(text, sizeof(text), "slower: %.2fx the best (%s vs %s%s)", ratio,
                    plan_text::time(plan.step_time_s).c_str(), plan_text::time(best.step_time_s).c_str(),
                    bubble.c_str());
    }
    plan.reason = text;
  }
  return ranked;
}

}  // namespace

const char* planStatusName(PlanStatus status) {
  switch (status) {
    case PlanStatus::kBest: return "best";
    case PlanStatus::kSlower: return "slower";
    case PlanStatus::kDoesNotFit: return "does_not_fit";
    case PlanStatus::kUnsupported: return "unsupported";
    case PlanStatus::kCompileError: return "compile_error";
    case PlanStatus::kSimulateError: return "simulate_error";
  }
  return "?";
}

const PlanResult* AutoDistributeResult::best() const {
  return !plans.empty() && plans[0].status == PlanStatus::kBest ? &plans[0] : nullptr;
}

std::vector<PlanDimension> planDimensions(const AutoDistributeRequest& request, int64_t chips) {
  std::vector<PlanDimension> dims;
  PlanDimension tp{
      "tp", "tp", {}, [](RunRequest& r, const nlohmann::json& v) { r.tensor_parallel = v.get<int64_t>(); }, nullptr};
  for (int64_t d : divisorsOf(chips)) tp.values.push_back(d);
  dims.push_back(std::move(tp));
  PlanDimension pp{
      "pp", "pp", {}, [](RunRequest& r, const nlohmann::json& v) { r.pipeline_parallel = v.get<int64_t>(); }, nullptr};
  if (request.pp_degrees) {
    for (int64_t d : *request.pp_degrees) pp.values.push_back(d);
  } else {
    for (int64_t d : divisorsOf(chips)) {
      if (d <= kMaxDefaultPipelineDegree) pp.values.push_back(d);
    }
  }
  dims.push_back(std::move(pp));
  const auto pipelined = [](const RunRequest& r) { return r.pipeline_parallel > 1; };
  PlanDimension micro{"micro_batches",
                      "mb",
                      {},
                      [](RunRequest& r, const nlohmann::json& v) { r.micro_batches = v.get<int64_t>(); },
                      pipelined};
  for (int64_t m : request.micro_batches) micro.values.push_back(m);
  dims.push_back(std::move(micro));
  PlanDimension schedule{"pipeline_schedule",
                         "",
                         {},
                         [](RunRequest& r, const nlohmann::json& v) { r.pipeline_schedule = v.get<std::string>(); },
                         pipelined};
  for (const std::string& name : request.pipeline_schedules) schedule.values.push_back(name);
  dims.push_back(std::move(schedule));
  PlanDimension remat{
      "remat", "remat=", {}, [](RunRequest& r, const nlohmann::json& v) { r.remat = v.get<std::string>(); }, nullptr};
  for (const std::string& name : request.remats) remat.values.push_back(name);
  dims.push_back(std::move(remat));
  PlanDimension precision{
      "precision", "", {}, [](RunRequest& r, const nlohmann::json& v) { r.precision = v.get<std::string>(); }, nullptr};
  for (const std::string& name : request.precisions) precision.values.push_back(name);
  dims.push_back(std::move(precision));
  return dims;
}

PlanEvaluator simulatingEvaluator() {
  return {[](const RunRequest& request, const HardwareParams& hw) { return compileRequest(request, hw); },
          [](const program::Program& program, const HardwareParams& hw) { return simulate(program, hw); },
          [](const RunRequest& request, const HardwareParams& hw) { return compilePipeline(request, hw); },
          [](CompiledPipeline pipeline, const HardwareParams& hw) {
            pipeline.request.instruction_timeline = false;
            return simulatePipeline(std::move(pipeline), hw);
          }};
}

AutoDistributeResult autoDistribute(const AutoDistributeRequest& request, const PlanEvaluator& evaluator,
                                    const PlanProgress& progress) {
  return *autoDistributeOn(LocalCaseRunner(1), request, evaluator, progress);
}

std::optional<AutoDistributeResult> autoDistributeOn(const CaseRunner& runner, const AutoDistributeRequest& request,
                                                     const PlanEvaluator& evaluator, const PlanProgress& progress) {
  checkRequest(request);
  const HardwareParams hw = resolveHardware(request.base);
  const std::optional<Topology> slice = sliceOf(request.base, hw);
  AutoDistributeResult result;
  result.model = std::filesystem::path(request.base.model_path).filename().string();
  result.hw = hw.name();
  result.topology = slice->shapeString();
  result.chips = slice->numChips();
  result.global_batch = request.base.batch.value_or(kDefaultBatchPerChip * result.chips);
  result.hbm_capacity_bytes = static_cast<uint64_t>(hw.config().hbm().capacity_gib() * kGiB);
  const double limit_gib = request.memory_limit_gib.value_or(hw.config().hbm().capacity_gib());
  if (limit_gib > hw.config().hbm().capacity_gib()) {
    char text[200];
    std::snprintf(text, sizeof(text),
                  "--memory-limit-gib %g is above %s's HBM of %g GiB per chip (raise it with --set "
                  "hbm.capacity_gib=%g)",
                  limit_gib, hw.name().c_str(), hw.config().hbm().capacity_gib(), limit_gib);
    throw Error(ErrorKind::kInvalidConfig, text);
  }
  result.memory_limit_bytes = static_cast<uint64_t>(limit_gib * kGiB);
  HardwareParams unbounded = hw;
  unbounded.set("hbm.capacity_gib", kUnboundedCapacityGib);

  checkPipelineDegrees(request, *slice);
  const std::vector<PlanDimension> dims = planDimensions(request, result.chips);
  result.dimensions.push_back("dp");
  for (const PlanDimension& dim : dims) result.dimensions.push_back(dim.name);
  std::vector<Candidate> candidates = enumeratePlans(request, dims, *slice, result.global_batch);
  if (static_cast<int64_t>(candidates.size()) > request.max_plans) {
    throw Error(ErrorKind::kInvalidConfig,
                "the search has " + withCommas(candidates.size()) + " plans, more than --max-plans " +
                    std::to_string(request.max_plans) +
                    ": narrow it with --pp-degrees, --micro-batches, --pipeline-schedules or --precisions, or raise "
                    "--max-plans");
  }
  const CaseFunction evaluate_plan = [&](size_t index) {
    Candidate candidate = candidates.at(index);
    evaluate(candidate, evaluator, hw, unbounded, result.memory_limit_bytes);
    return outcomeText(candidate.result);
  };
  CaseDone done;
  if (progress) {
    done = [&](size_t index, const std::string& text) {
      PlanResult plan = candidates.at(index).result;
      readOutcome(text, plan);
      progress(plan, index, candidates.size());
    };
  }
  const std::optional<std::vector<std::string>> outcomes = runner.run(candidates.size(), evaluate_plan, done);
  if (!outcomes) return std::nullopt;
  for (size_t i = 0; i < candidates.size(); ++i) readOutcome((*outcomes)[i], candidates[i].result);
  const bool any_compiled = std::any_of(candidates.begin(), candidates.end(),
                                        [](const Candidate& c) { return c.result.hbm_peak_bytes.has_value(); });
  if (!any_compiled && !candidates.empty()) {
    // Each distinct reason once, with the first plan that gave it.
    std::vector<std::string> seen;
    std::string reasons;
    for (const Candidate& candidate : candidates) {
      if (std::find(seen.begin(), seen.end(), candidate.result.reason) != seen.end()) continue;
      seen.push_back(candidate.result.reason);
      if (seen.size() <= 3)
        reasons += (seen.size() > 1 ? "; " : "") + candidate.result.label + ": " + candidate.result.reason;
    }
    if (seen.size() > 3) reasons += "; and " + std::to_string(seen.size() - 3) + " other reasons";
    throw Error(ErrorKind::kInvalidConfig,
                "no plan of " + result.model + " compiles on " + result.topology + " (" + reasons + ")");
  }
  result.plans = rank(std::move(candidates));
  return result;
}

}  // namespace tpusim
