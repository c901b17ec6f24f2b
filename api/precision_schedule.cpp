#include "api/precision_schedule.hpp"

#include <algorithm>
#include <cctype>
#include <map>

#include "frontend/train/precision_policy.hpp"
#include "sim/common/error.hpp"

namespace tpusim {

namespace {

using Json = nlohmann::ordered_json;

uint64_t parseSteps(const std::string& text, const std::string& entry) {
  bool digits = !text.empty() && text.size() <= 18;
  for (char ch : text) digits = digits && std::isdigit(static_cast<unsigned char>(ch));
  const uint64_t steps = digits ? std::stoull(text) : 0;
  if (steps == 0) {
    throw Error(ErrorKind::kInvalidConfig,
                "precision schedule entry '" + entry + "': the step count must be a positive integer");
  }
  return steps;
}

double meanMacUtilization(const Json& report) {
  double sum = 0;
  int count = 0;
  for (const auto& [name, unit] : report.at("units").items()) {
    if (!unit.contains("mac_utilization")) continue;
    sum += unit.at("mac_utilization").get<double>();
    ++count;
  }
  return count > 0 ? sum / count : 0.0;
}

}  // namespace

std::vector<PrecisionPhase> parsePrecisionSchedule(const std::string& text) {
  if (text.empty()) throw Error(ErrorKind::kInvalidConfig, "the precision schedule is empty (POLICY:STEPS,...)");
  std::vector<PrecisionPhase> phases;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string entry = text.substr(start, end - start);
    const size_t colon = entry.find(':');
    if (colon == std::string::npos) {
      throw Error(ErrorKind::kInvalidConfig,
                  "precision schedule entry '" + entry + "' is not POLICY:STEPS (e.g. float32:100)");
    }
    PrecisionPhase phase{entry.substr(0, colon), parseSteps(entry.substr(colon + 1), entry)};
    parsePrecisionPolicy(phase.policy);  // the name's own one-line error
    phases.push_back(phase);
    start = end + 1;
  }
  return phases;
}

RunOutcome runPrecisionSchedule(const RunRequest& request) {
  const std::vector<PrecisionPhase> phases = parsePrecisionSchedule(request.precision_schedule);
  std::map<std::string, RunOutcome> by_policy;  // each policy's step, simulated once
  for (const PrecisionPhase& phase : phases) {
    if (by_policy.count(phase.policy)) continue;
    RunRequest step = request;
    step.precision = phase.policy;
    step.precision_schedule.clear();
    by_policy.emplace(phase.policy, runRequest(step));
  }
  Json rows = Json::array();
  uint64_t first_step = 0;
  double total_s = 0;
  for (const PrecisionPhase& phase : phases) {
    const Json& report = by_policy.at(phase.policy).report;
    const double step_s = report.at("step_time_s").get<double>();
    rows.push_back({{"policy", phase.policy},
                    {"first_step", first_step},
                    {"steps", phase.steps},
                    {"step_cycles", report.at("total_cycles")},
                    {"step_time_s", step_s},
                    {"phase_time_s", step_s * static_cast<double>(phase.steps)},
                    {"hbm_peak_bytes", report.at("memory").at("peak_bytes")},
                    {"mxu_mac_utilization", meanMacUtilization(report)}});
    first_step += phase.steps;
    total_s += step_s * static_cast<double>(phase.steps);
  }
  // The same steps under one policy throughout, for each policy of the schedule.
  Json single = Json::object();
  for (const auto& [policy, outcome] : by_policy) {
    single[policy] = outcome.report.at("step_time_s").get<double>() * static_cast<double>(first_step);
  }
  RunOutcome outcome = by_policy.at(phases.back().policy);
  outcome.report["precision_schedule"] = {
      {"method", "each phase's step compiled and simulated once; every step of a phase takes its time"},
      {"phases", rows},
      {"steps", first_step},
      {"switches", phases.size() - 1},
      {"total_time_s", total_s},
      {"mean_step_time_s", total_s / static_cast<double>(first_step)},
      {"single_policy_time_s", single}};
  return outcome;
}

}  // namespace tpusim
