#include "api/auto_distribute.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/parallel_degrees.hpp"
#include "frontend/import/hlo_import.hpp"
#include "frontend/program_io.hpp"
#include "frontend/train/precision_policy.hpp"
#include "frontend/train/training_graph.hpp"
#include "report/peaks_section.hpp"
#include "report/report.hpp"
#include "report/text_format.hpp"
#include "sim/common/error.hpp"

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

std::string valueText(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// 3 significant digits in the largest unit below 1000 of it.
std::string scaled(double value, const std::vector<std::pair<double, const char*>>& units) {
  for (const auto& [scale, unit] : units) {
    if (value >= scale || scale == units.back().first) {
      char text[64];
      std::snprintf(text, sizeof(text), "%.3g %s", value / scale, unit);
      return text;
    }
  }
  return "";
}

std::string bytesText(uint64_t bytes) {
  return scaled(static_cast<double>(bytes), {{kGiB, "GiB"}, {1024.0 * 1024.0, "MiB"}, {1024.0, "KiB"}, {1.0, "B"}});
}

std::string timeText(double seconds) {
  return scaled(seconds, {{1.0, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}});
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
  if (base.data_parallel != 0 || base.tensor_parallel != 1 || base.pipeline_parallel != 1 || base.remat != "none" ||
      base.precision != "float32" || !base.strategy.empty() || !base.precision_schedule.empty()) {
    throw Error(ErrorKind::kInvalidConfig,
                "autodistribute chooses the degrees, remat and precision itself; leave --dp, --tp, --pp, --remat, "
                "--precision, --precision-schedule and --strategy out");
  }
  if (base.batch && *base.batch <= 0) throw Error(ErrorKind::kInvalidConfig, "--batch must be > 0");
  if (request.memory_limit_gib && !(*request.memory_limit_gib > 0 && std::isfinite(*request.memory_limit_gib))) {
    throw Error(ErrorKind::kInvalidConfig, "--memory-limit-gib must be > 0");
  }
  if (request.precisions.empty()) throw Error(ErrorKind::kInvalidConfig, "--precisions needs at least one policy");
  for (const std::string& name : request.precisions) parsePrecisionPolicy(name);
  if (request.remats.empty()) throw Error(ErrorKind::kInvalidConfig, "autodistribute needs at least one remat value");
  for (const std::string& name : request.remats) parseRemat(name);
}

struct Candidate {
  PlanResult result;
  RunRequest request;
  size_t index = 0;  // in search order
};

// Every plan of the space in search order: the product of the dimensions' values, the
// last varying fastest, keeping the combinations whose degrees factor the slice.
std::vector<Candidate> enumeratePlans(const AutoDistributeRequest& request, const std::vector<PlanDimension>& dims,
                                      const Topology& slice, int64_t global_batch) {
  std::vector<Candidate> plans;
  std::vector<size_t> at(dims.size(), 0);
  const auto done = [&] { return dims.empty() || at[0] == dims[0].values.size(); };
  while (!done()) {
    Candidate candidate;
    candidate.request = request.base;
    for (size_t d = 0; d < dims.size(); ++d) dims[d].apply(candidate.request, dims[d].values[at[d]]);
    candidate.request.data_parallel = 0;
    std::optional<ParallelDegrees> degrees;
    try {
      degrees = parallelDegreesOf(candidate.request, slice);
    } catch (const Error&) {
      // Not a factorization of the slice: not a plan.
    }
    if (degrees) {
      PlanResult& plan = candidate.result;
      plan.plan["dp"] = degrees->dp;
      plan.label = "dp" + std::to_string(degrees->dp);
      for (size_t d = 0; d < dims.size(); ++d) {
        const nlohmann::json& value = dims[d].values[at[d]];
        plan.plan[dims[d].name] = value;
        plan.label += " " + dims[d].label_prefix + valueText(value);
      }
      if (global_batch % degrees->dp == 0) {
        plan.batch_per_replica = global_batch / degrees->dp;
        candidate.request.batch = plan.batch_per_replica;
      } else {
        plan.status = PlanStatus::kCompileError;
        plan.reason = "compile: the global batch " + std::to_string(global_batch) + " does not split over dp " +
                      std::to_string(degrees->dp);
      }
      candidate.index = plans.size();
      plans.push_back(std::move(candidate));
    }
    for (size_t d = dims.size(); d-- > 0;) {
      if (++at[d] < dims[d].values.size() || d == 0) break;
      at[d] = 0;
    }
  }
  return plans;
}

std::string oneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

double mxuUtilization(const program::Program& program, const SimResult& sim, const HardwareParams& hw) {
  uint64_t flops = 0;
  for (const program::Instruction& ins : program.chips(0).instructions()) {
    if (ins.unit() == program::MXU) flops += ins.flops();
  }
  const double peak = peaksSection(hw).at("mxu_flops_per_s").get<double>();
  const double seconds = static_cast<double>(sim.total_cycles) / sim.clock_hz;
  return seconds > 0 && peak > 0 ? static_cast<double>(flops) / (seconds * peak) : 0.0;
}

// Compiles the plan, checks its peak against the limit, and simulates it if it fits.
void evaluate(Candidate& candidate, const PlanEvaluator& evaluator, const HardwareParams& hw,
              const HardwareParams& unbounded, uint64_t limit_bytes) {
  PlanResult& plan = candidate.result;
  if (!plan.reason.empty()) return;  // rejected while enumerating
  program::Program program;
  try {
    program = evaluator.compile(candidate.request, unbounded);
  } catch (const Error& error) {
    plan.status = PlanStatus::kCompileError;
    plan.reason = "compile: " + oneLine(error.what());
    return;
  }
  plan.hbm_peak_bytes = program.chips(0).memory().peak_bytes();
  if (*plan.hbm_peak_bytes > limit_bytes) {
    plan.status = PlanStatus::kDoesNotFit;
    plan.reason = "does not fit: " + bytesText(*plan.hbm_peak_bytes) + " > " + bytesText(limit_bytes);
    return;
  }
  try {
    const SimResult sim = evaluator.simulate(program, hw);
    plan.step_cycles = sim.total_cycles;
    plan.step_time_s = static_cast<double>(sim.total_cycles) / sim.clock_hz;
    plan.mxu_utilization = mxuUtilization(program, sim, hw);
    plan.status = PlanStatus::kSlower;  // until ranked
  } catch (const Error& error) {
    plan.status = PlanStatus::kSimulateError;
    plan.reason = "simulate: " + oneLine(error.what());
  }
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
    char text[160];
    if (*plan.step_cycles == *best.step_cycles) {
      std::snprintf(text, sizeof(text), "slower: ties the best (%s), after it in search order",
                    timeText(plan.step_time_s).c_str());
    } else {
      std::snprintf(text, sizeof(text), "slower: %.2fx the best (%s vs %s)", ratio, timeText(plan.step_time_s).c_str(),
                    timeText(best.step_time_s).c_str());
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
      "tp", "tp", {}, [](RunRequest& r, const nlohmann::json& v) { r.tensor_parallel = v.get<int64_t>(); }};
  for (int64_t d : divisorsOf(chips)) tp.values.push_back(d);
  dims.push_back(std::move(tp));
  PlanDimension remat{
      "remat", "remat=", {}, [](RunRequest& r, const nlohmann::json& v) { r.remat = v.get<std::string>(); }};
  for (const std::string& name : request.remats) remat.values.push_back(name);
  dims.push_back(std::move(remat));
  PlanDimension precision{
      "precision", "", {}, [](RunRequest& r, const nlohmann::json& v) { r.precision = v.get<std::string>(); }};
  for (const std::string& name : request.precisions) precision.values.push_back(name);
  dims.push_back(std::move(precision));
  return dims;
}

PlanEvaluator simulatingEvaluator() {
  return {[](const RunRequest& request, const HardwareParams& hw) { return compileRequest(request, hw); },
          [](const program::Program& program, const HardwareParams& hw) { return simulate(program, hw); }};
}

AutoDistributeResult autoDistribute(const AutoDistributeRequest& request, const PlanEvaluator& evaluator,
                                    const PlanProgress& progress) {
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

  const std::vector<PlanDimension> dims = planDimensions(request, result.chips);
  result.dimensions.push_back("dp");
  for (const PlanDimension& dim : dims) result.dimensions.push_back(dim.name);
  std::vector<Candidate> candidates = enumeratePlans(request, dims, *slice, result.global_batch);
  for (Candidate& candidate : candidates) {
    evaluate(candidate, evaluator, hw, unbounded, result.memory_limit_bytes);
    if (progress) progress(candidate.result, candidate.index, candidates.size());
  }
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

nlohmann::ordered_json autoDistributeJson(const AutoDistributeResult& result) {
  nlohmann::ordered_json json;
  json["kind"] = "tpusim.autodistribute";
  json["model"] = result.model;
  json["hw"] = result.hw;
  json["topology"] = result.topology;
  json["chips"] = result.chips;
  json["global_batch"] = result.global_batch;
  json["memory_limit_bytes"] = result.memory_limit_bytes;
  json["hbm_capacity_bytes"] = result.hbm_capacity_bytes;
  json["dimensions"] = result.dimensions;
  json["best"] = result.best() ? nlohmann::ordered_json(result.best()->label) : nlohmann::ordered_json();
  nlohmann::ordered_json plans = nlohmann::ordered_json::array();
  for (const PlanResult& plan : result.plans) {
    nlohmann::ordered_json entry;
    entry["rank"] = plan.rank;
    entry["label"] = plan.label;
    entry["plan"] = plan.plan;
    entry["batch_per_replica"] = plan.batch_per_replica;
    entry["status"] = planStatusName(plan.status);
    entry["reason"] = plan.reason;
    const bool ran = plan.rank > 0;
    entry["step_cycles"] = ran ? nlohmann::ordered_json(*plan.step_cycles) : nlohmann::ordered_json();
    entry["step_time_s"] = ran ? nlohmann::ordered_json(plan.step_time_s) : nlohmann::ordered_json();
    entry["slowdown"] = ran ? nlohmann::ordered_json(static_cast<double>(*plan.step_cycles) /
                                                     static_cast<double>(*result.best()->step_cycles))
                            : nlohmann::ordered_json();
    entry["mxu_utilization"] = ran ? nlohmann::ordered_json(plan.mxu_utilization) : nlohmann::ordered_json();
    entry["hbm_peak_bytes"] =
        plan.hbm_peak_bytes ? nlohmann::ordered_json(*plan.hbm_peak_bytes) : nlohmann::ordered_json();
    plans.push_back(std::move(entry));
  }
  json["plans"] = std::move(plans);
  return json;
}

std::string autoDistributeCsv(const AutoDistributeResult& result) {
  std::ostringstream out;
  out << "rank,label";
  for (const std::string& name : result.dimensions) out << "," << name;
  out << ",batch_per_replica,status,step_cycles,step_time_s,mxu_utilization,hbm_peak_bytes,reason\n";
  for (const PlanResult& plan : result.plans) {
    out << plan.rank << "," << plan.label;
    for (const std::string& name : result.dimensions) out << "," << valueText(plan.plan.at(name));
    out << "," << plan.batch_per_replica << "," << planStatusName(plan.status) << ",";
    if (plan.rank > 0) {
      char figures[96];
      std::snprintf(figures, sizeof(figures), "%llu,%.9g,%.6f", static_cast<unsigned long long>(*plan.step_cycles),
                    plan.step_time_s, plan.mxu_utilization);
      out << figures;
    } else {
      out << ",,";
    }
    out << "," << (plan.hbm_peak_bytes ? std::to_string(*plan.hbm_peak_bytes) : "");
    out << ",\"";
    for (char c : plan.reason) out << (c == '"' ? "\"\"" : std::string(1, c));
    out << "\"\n";
  }
  return out.str();
}

std::string writeAutoDistributeFiles(const AutoDistributeResult& result, const std::string& dir) {
  const std::filesystem::path out(dir);
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) throw Error(ErrorKind::kInvalidConfig, "cannot create output directory '" + dir + "': " + ec.message());
  const std::string json_path = (out / "autodistribute.json").string();
  writeReport(autoDistributeJson(result), json_path);
  std::ofstream csv(out / "autodistribute.csv", std::ios::trunc);
  csv << autoDistributeCsv(result);
  if (!csv) throw Error(ErrorKind::kInvalidConfig, "cannot write '" + (out / "autodistribute.csv").string() + "'");
  return json_path;
}

std::string autoDistributeTable(const AutoDistributeResult& result) {
  std::ostringstream out;
  size_t width = 4;
  for (const PlanResult& plan : result.plans) width = std::max(width, plan.label.size());
  char line[512];
  out << result.model << " on " << result.topology << " (" << result.chips << " chips, " << result.hw
      << "), global batch " << result.global_batch << ", limit " << bytesText(result.memory_limit_bytes)
      << " of HBM per chip\n";
  std::snprintf(line, sizeof(line), "%-4s  %-*s  %14s  %10s  %8s  %10s  %s\n", "rank", static_cast<int>(width), "plan",
                "step cycles", "step time", "MXU util", "HBM peak", "verdict");
  out << line;
  for (const PlanResult& plan : result.plans) {
    const bool ran = plan.rank > 0;
    char utilization[32];
    std::snprintf(utilization, sizeof(utilization), "%.1f%%", 100.0 * plan.mxu_utilization);
    std::snprintf(line, sizeof(line), "%-4s  %-*s  %14s  %10s  %8s  %10s  ",
                  ran ? std::to_string(plan.rank).c_str() : "-", static_cast<int>(width), plan.label.c_str(),
                  ran ? withCommas(*plan.step_cycles).c_str() : "-", ran ? timeText(plan.step_time_s).c_str() : "-",
                  ran ? utilization : "-", plan.hbm_peak_bytes ? bytesText(*plan.hbm_peak_bytes).c_str() : "-");
    out << line << (plan.status == PlanStatus::kBest ? "best" : plan.reason) << "\n";
  }
  return out.str();
}

}  // namespace tpusim
