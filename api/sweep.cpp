#include "api/sweep.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "api/run_files.hpp"
#include "report/report.hpp"
#include "report/text_format.hpp"
#include "sim/common/atomic_file.hpp"
#include "sim/common/error.hpp"

namespace tpusim {

namespace {

using Json = nlohmann::ordered_json;

Json caseFields(const SweepCase& c) {
  Json row;
  row["index"] = c.index;
  row["model"] = c.model;
  row["preset"] = c.preset;
  row["sets"] = c.sets;
  row["strategy"] = c.strategy;
  return row;
}

const char* const kMetrics[] = {"step_cycles",
                                "step_time_s",
                                "mfu",
                                "mxu_utilization",
                                "busiest_unit",
                                "busiest_utilization",
                                "hbm_peak_bytes",
                                "hbm_bandwidth_utilization"};

Json failedRow(const SweepCase& c, const Error& error) {
  Json row = caseFields(c);
  row["status"] = "error";
  row["error"] = std::string(errorKindName(error.kind())) + ": " + error.what();
  for (const char* metric : kMetrics) row[metric] = nullptr;
  return row;
}

// A case in whichever process runs it: {"row": ..., "report": the report or null}, as text.
std::string runCase(const SweepCase& c, bool keep_report) {
  Json result;
  try {
    const RunOutcome outcome = runRequest(c.request);
    result["row"] = sweepRow(c, outcome.report);
    result["report"] = keep_report ? outcome.report : Json();
  } catch (const Error& error) {
    result["row"] = failedRow(c, error);
    result["report"] = nullptr;
  }
  return result.dump();
}

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char ch : text) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

std::string setsText(const Json& row) {
  std::string text;
  for (const auto& set : row.at("sets")) {
    if (!text.empty()) text += ',';
    text += set.get<std::string>();
  }
  return text.empty() ? "preset" : text;
}

// A CSV cell of a number: integers as they are, fractions to %.9g; empty for null.
std::string cell(const Json& value) {
  if (value.is_null()) return "";
  if (value.is_number_unsigned()) return std::to_string(value.get<uint64_t>());
  if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
  if (value.is_number()) {
    char text[64];
    std::snprintf(text, sizeof(text), "%.9g", value.get<double>());
    return text;
  }
  return quoted(value.get<std::string>());
}

}  // namespace

size_t SweepResult::failed() const {
  return static_cast<size_t>(
      std::count_if(rows.begin(), rows.end(), [](const Json& row) { return row.at("status") != "ok"; }));
}

Json sweepRow(const SweepCase& c, const Json& report) {
  Json row = caseFields(c);
  row["status"] = "ok";
  row["error"] = nullptr;
  // With a pipeline the report is stage 0's chip running one micro-batch; the step is the schedule's.
  const Json& step = report.contains("pipeline") ? report.at("pipeline") : report;
  row["step_cycles"] = step.at(report.contains("pipeline") ? "step_cycles" : "total_cycles");
  row["step_time_s"] = step.at("step_time_s");
  row["mfu"] = report.contains("mfu") ? report.at("mfu").at("mfu") : Json();
  // The MXUs' mean busy share and the busiest unit, as the report's bottleneck verdict counts them.
  double mxu_sum = 0, busiest = -1;
  size_t mxus = 0;
  std::string busiest_unit;
  for (const auto& [name, unit] : report.at("units").items()) {
    const double utilization = unit.at("utilization").get<double>();
    if (utilization > busiest) busiest = utilization, busiest_unit = name;
    if (unit.contains("mac_utilization")) mxu_sum += utilization, ++mxus;
  }
  row["mxu_utilization"] = mxus > 0 ? Json(mxu_sum / static_cast<double>(mxus)) : Json();
  row["busiest_unit"] = busiest_unit;
  row["busiest_utilization"] = busiest;
  row["hbm_peak_bytes"] = report.at("memory").at("peak_bytes");
  row["hbm_bandwidth_utilization"] = report.at("hbm").at("bandwidth_utilization");
  return row;
}

std::optional<SweepResult> runSweep(const std::vector<SweepCase>& cases, const CaseRunner& runner, bool keep_reports,
                                    const SweepProgress& progress) {
  const CaseFunction run_case = [&cases, keep_reports](size_t index) { return runCase(cases.at(index), keep_reports); };
  CaseDone done;
  if (progress) {
    done = [&progress, &cases](size_t, const std::string& text) {
      progress(Json::parse(text).at("row"), cases.size());
    };
  }
  const std::optional<std::vector<std::string>> texts = runner.run(cases.size(), run_case, done);
  if (!texts) return std::nullopt;
  SweepResult result;
  for (const std::string& text : *texts) {
    Json parsed = Json::parse(text);
    result.rows.push_back(std::move(parsed.at("row")));
    if (keep_reports) result.reports.push_back(parsed.at("report").is_null() ? "" : parsed.at("report").dump());
  }
  return result;
}

Json sweepJson(const SweepResult& result) {
  Json json;
  json["kind"] = "tpusim.sweep";
  json["cases"] = result.rows.size();
  json["failed"] = result.failed();
  json["rows"] = result.rows;
  return json;
}

std::string sweepCsv(const SweepResult& result) {
  std::ostringstream out;
  out << "index,model,preset,sets,strategy,status";
  for (const char* metric : kMetrics) out << "," << metric;
  out << ",error\n";
  for (const Json& row : result.rows) {
    out << row.at("index").get<size_t>() << "," << quoted(row.at("model").get<std::string>()) << ","
        << quoted(row.at("preset").get<std::string>()) << "," << quoted(setsText(row)) << ","
        << quoted(row.at("strategy").get<std::string>()) << "," << row.at("status").get<std::string>();
    for (const char* metric : kMetrics) out << "," << cell(row.at(metric));
    out << "," << (row.at("error").is_null() ? "" : quoted(row.at("error").get<std::string>())) << "\n";
  }
  return out.str();
}

std::string sweepTable(const SweepResult& result) {
  std::ostringstream out;
  size_t width = 4;
  std::vector<std::string> labels;
  for (const Json& row : result.rows) {
    labels.push_back(row.at("model").get<std::string>() + " " + row.at("preset").get<std::string>() + " " +
                     setsText(row) + " " + row.at("strategy").get<std::string>());
    width = std::max(width, labels.back().size());
  }
  char line[1024];
  std::snprintf(line, sizeof(line), "%5s  %-*s  %14s  %12s  %8s  %s\n", "case", static_cast<int>(width), "run",
                "step cycles", "step time", "MXU busy", "busiest unit");
  out << line;
  for (size_t i = 0; i < result.rows.size(); ++i) {
    const Json& row = result.rows[i];
    if (row.at("status") != "ok") {
      std::snprintf(line, sizeof(line), "%5zu  %-*s  ", i, static_cast<int>(width), labels[i].c_str());
      out << line << row.at("error").get<std::string>() << "\n";
      continue;
    }
    char time[32], mxu[32], busiest[160];
    std::snprintf(time, sizeof(time), "%.3f us", row.at("step_time_s").get<double>() * 1e6);
    if (row.at("mxu_utilization").is_null()) {
      std::snprintf(mxu, sizeof(mxu), "-");
    } else {
      std::snprintf(mxu, sizeof(mxu), "%.1f%%", 100 * row.at("mxu_utilization").get<double>());
    }
    std::snprintf(busiest, sizeof(busiest), "%s (%.1f%%)", row.at("busiest_unit").get<std::string>().c_str(),
                  100 * row.at("busiest_utilization").get<double>());
    std::snprintf(line, sizeof(line), "%5zu  %-*s  %14s  %12s  %8s  %s\n", i, static_cast<int>(width),
                  labels[i].c_str(), withCommas(row.at("step_cycles").get<uint64_t>()).c_str(), time, mxu, busiest);
    out << line;
  }
  return out.str();
}

std::string caseDirectory(size_t index, size_t count) {
  const size_t digits = std::max<size_t>(4, std::to_string(count > 0 ? count - 1 : 0).size());
  std::string number = std::to_string(index);
  return "cases/" + std::string(digits - std::min(digits, number.size()), '0') + number;
}

std::vector<std::string> writeSweepFiles(const SweepResult& result, const std::string& dir) {
  const std::filesystem::path out(dir);
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) throw Error(ErrorKind::kInvalidConfig, "cannot create output directory '" + dir + "': " + ec.message());
  const std::string json_path = (out / "sweep.json").string();
  const std::string csv_path = (out / "sweep.csv").string();
  writeReport(sweepJson(result), json_path);
  writeFileAtomically(csv_path, sweepCsv(result));
  for (size_t i = 0; i < result.reports.size(); ++i) {
    if (result.reports[i].empty()) continue;
    RunOutcome outcome;
    outcome.report = Json::parse(result.reports[i]);
    writeRunFiles(outcome, (out / caseDirectory(i, result.rows.size())).string());
  }
  return {json_path, csv_path};
}

}  // namespace tpusim
