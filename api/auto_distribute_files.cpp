// autodistribute.json, its CSV and the ranked table (api/auto_distribute.hpp).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "api/auto_distribute.hpp"
#include "api/plan_text.hpp"
#include "report/report.hpp"
#include "report/text_format.hpp"
#include "sim/common/atomic_file.hpp"
#include "sim/common/error.hpp"

namespace tpusim {

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
    entry["pipeline_bubble"] =
        ran && plan.pipeline_bubble ? nlohmann::ordered_json(*plan.pipeline_bubble) : nlohmann::ordered_json();
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
  out << ",batch_per_replica,status,step_cycles,step_time_s,mxu_utilization,pipeline_bubble,hbm_peak_bytes,reason\n";
  for (const PlanResult& plan : result.plans) {
    out << plan.rank << "," << plan.label;
    for (const std::string& name : result.dimensions) {
      const nlohmann::json& value = plan.plan.at(name);
      out << "," << (value.is_null() ? "" : plan_text::value(value));
    }
    out << "," << plan.batch_per_replica << "," << planStatusName(plan.status) << ",";
    if (plan.rank > 0) {
      char figures[96];
      std::snprintf(figures, sizeof(figures), "%llu,%.9g,%.6f,", static_cast<unsigned long long>(*plan.step_cycles),
                    plan.step_time_s, plan.mxu_utilization);
      out << figures;
      if (plan.pipeline_bubble) {
        std::snprintf(figures, sizeof(figures), "%.6f", *plan.pipeline_bubble);
        out << figures;
      }
    } else {
      out << ",,,";
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
  writeFileAtomically((out / "autodistribute.csv").string(), autoDistributeCsv(result));
  return json_path;
}

std::string autoDistributeTable(const AutoDistributeResult& result) {
  std::ostringstream out;
  size_t width = 4;
  for (const PlanResult& plan : result.plans) width = std::max(width, plan.label.size());
  char line[512];
  out << result.model << " on " << result.topology << " (" << result.chips << " chips, " << result.hw
      << "), global batch " << result.global_batch << ", limit " << plan_text::bytes(result.memory_limit_bytes)
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
                  ran ? withCommas(*plan.step_cycles).c_str() : "-",
                  ran ? plan_text::time(plan.step_time_s).c_str() : "-", ran ? utilization : "-",
                  plan.hbm_peak_bytes ? plan_text::bytes(*plan.hbm_peak_bytes).c_str() : "-");
    std::string verdict = plan.reason;
    if (plan.status == PlanStatus::kBest) {
      verdict = plan.pipeline_bubble ? "best (" + plan_text::bubble(*plan.pipeline_bubble) + ")" : "best";
    }
    out << line << verdict << "\n";
  }
  return out.str();
}

}  // namespace tpusim
