#include "report/run_outputs.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "report/csv_tables.hpp"
#include "report/html_report.hpp"
#include "report/interconnect_section.hpp"
#include "report/report.hpp"
#include "report/trace_events.hpp"
#include "report/utilization_windows.hpp"
#include "sim/common/atomic_file.hpp"
#include "sim/common/error.hpp"

namespace tpusim {

namespace {

namespace fs = std::filesystem;

void writeText(const fs::path& path, const std::string& text) {
  writeFileAtomically(path.string(), text);
}

}  // namespace

nlohmann::ordered_json readRunReport(const std::string& dir) {
  if (!fs::is_directory(dir)) throw Error(ErrorKind::kInvalidInput, "run directory '" + dir + "' does not exist");
  const fs::path path = fs::path(dir) / "report.json";
  std::ifstream file(path);
  if (!fs::is_regular_file(path) || !file)
    throw Error(ErrorKind::kInvalidInput, "'" + dir + "' has no report.json (write one with tpusim run --out)");
  nlohmann::ordered_json report;
  try {
    report = nlohmann::ordered_json::parse(file);
  } catch (const nlohmann::json::exception& error) {
    throw Error(ErrorKind::kInvalidInput, path.string() + " is not valid JSON: " + error.what());
  }
  if (!report.is_object() || !report.contains("schema_version") || !report["schema_version"].is_number_integer()) {
    throw Error(ErrorKind::kInvalidInput, path.string() + " is not a tpusim report: it has no schema_version");
  }
  if (report["schema_version"].get<int>() != kReportSchemaVersion) {
    throw Error(ErrorKind::kInvalidInput, path.string() + " has schema_version " + report["schema_version"].dump() +
                                              "; this tpusim reads version " + std::to_string(kReportSchemaVersion));
  }
  if (report.contains("kind") && report["kind"] != kSimulationReportKind) {
    throw Error(ErrorKind::kInvalidInput, path.string() + " is a " + report["kind"].dump() +
                                              " report; tpusim report reads a simulation's (tpusim run)");
  }
  return report;
}

std::vector<std::pair<std::string, std::string>> reportViews(const nlohmann::ordered_json& report) {
  std::vector<std::pair<std::string, std::string>> files;
  try {
    files.emplace_back("per_op.csv", reportPerOpCsv(report));
    files.emplace_back("layers.csv", reportLayersCsv(report));
    files.emplace_back("units.csv", reportUnitsCsv(report));
    if (hasInstructionTimeline(report)) {
      files.emplace_back("timeline.csv", timelineCsv(utilizationWindows(report), report.at("clock_hz").get<double>()));
      files.emplace_back("trace.json", traceJson(report));
    }
    files.emplace_back("report.html", reportHtml(report));
    // One row per directed ICI link, for runs on a slice (interconnect_section.hpp).
    if (report.contains("interconnect")) files.emplace_back("links.csv", linksCsv(report));
  } catch (const nlohmann::json::exception& error) {
    // A field missing or of the wrong type: the report was edited or is from another tool.
    throw Error(ErrorKind::kInvalidInput, "report.json is malformed: " + std::string(error.what()));
  }
  return files;
}

std::vector<std::string> writeReportViews(const nlohmann::ordered_json& report, const std::string& dir) {
  std::vector<std::string> written;
  for (const auto& [name, text] : reportViews(report)) {
    writeText(fs::path(dir) / name, text);
    written.push_back(name);
  }
  if (!report.contains("interconnect")) {
    std::error_code ec;
    fs::remove(fs::path(dir) / "links.csv", ec);
  }
  if (!hasInstructionTimeline(report)) {
    for (const char* stale : {"timeline.csv", "trace.json"}) {
      std::error_code ec;
      fs::remove(fs::path(dir) / stale, ec);
    }
  }
  return written;
}

}  // namespace tpusim
