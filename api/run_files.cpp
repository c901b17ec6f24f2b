#include "api/run_files.hpp"

#include <filesystem>

#include "api/functional.hpp"
#include "api/npy.hpp"
#include "report/report.hpp"
#include "report/run_outputs.hpp"
#include "sim/common/error.hpp"

namespace tpusim {

namespace {

void makeDirectory(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(ErrorKind::kInvalidConfig, "cannot create output directory '" + dir.string() + "': " + ec.message());
}

}  // namespace

std::vector<std::string> writeRunFiles(const RunOutcome& outcome, const std::string& dir) {
  const std::filesystem::path out(dir);
  makeDirectory(out);
  writeReport(outcome.report, (out / "report.json").string());
  std::vector<std::string> views = writeReportViews(outcome.report, dir);
  if (!outcome.functional_outputs.empty()) {
    makeDirectory(out / "functional");
    for (const NamedValues* values : {&outcome.functional_inputs, &outcome.functional_outputs}) {
      for (const auto& [name, value] : *values) writeNpy(value, (out / functionalFileName(name)).string());
    }
  }
  return views;
}

void writeReferenceFiles(const ReferenceOutcome& outcome, const std::string& dir) {
  const std::filesystem::path out(dir);
  makeDirectory(out / "reference");
  for (const NamedValues* values : {&outcome.inputs, &outcome.outputs}) {
    for (const auto& [name, value] : *values) writeNpy(value, (out / valueFileName("reference", name)).string());
  }
  writeReport(outcome.report, (out / "report.json").string());
}

}  // namespace tpusim
