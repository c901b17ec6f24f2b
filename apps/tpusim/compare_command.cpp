// `tpusim compare SIM_REPORT REF_REPORT`: the simulated step beside the one a
// reference backend ran, per op and per output tensor, printed and written as
// DIR/compare.csv, DIR/numerics.csv, DIR/compare.json and DIR/compare.html, the
// simulation's report page with the comparison's sections (docs/reference.md).
#include <filesystem>
#include <iostream>

#include <boost/program_options.hpp>

#include "api/compare_run.hpp"
#include "apps/tpusim/commands.hpp"
#include "apps/tpusim/model_options.hpp"
#include "report/compare_format.hpp"
#include "report/html_report.hpp"
#include "report/report.hpp"
#include "sim/common/atomic_file.hpp"
#include "sim/common/error.hpp"

namespace tpusim::cli {

namespace po = boost::program_options;

namespace {

void writeText(const std::string& text, const std::filesystem::path& path) {
  writeFileAtomically(path.string(), text);
}

}  // namespace

int compareCommand(const std::vector<std::string>& args) {
  const std::string usage = "usage: tpusim compare SIM_REPORT REF_REPORT [--out DIR]";
  std::string out_dir = "tpusim-compare";
  std::vector<std::string> reports;
  po::options_description desc("options");
  desc.add_options()("help,h", "show this help")(
      "out", po::value(&out_dir)->default_value(out_dir),
      "directory for compare.csv, numerics.csv, compare.json and compare.html");
  if (!parsePositionals(args, desc, usage, "report", 2, &reports)) return 0;
  if (reports.size() != 2) throw Error(ErrorKind::kInvalidConfig, "compare needs two reports (" + usage + ")");
  const nlohmann::ordered_json comparison = compareReportFiles(reports[0], reports[1]);
  const std::filesystem::path out(out_dir);
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) throw Error(ErrorKind::kInvalidConfig, "cannot create output directory '" + out_dir + "': " + ec.message());
  writeText(perOpCsv(comparison), out / "compare.csv");
  writeText(numericsCsv(comparison), out / "numerics.csv");
  writeReport(comparison, (out / "compare.json").string());
  std::string page;
  try {
    page = reportHtml(readReportJson(reports[0]), comparison);
  } catch (const nlohmann::json::exception& error) {
    throw Error(ErrorKind::kInvalidInput, reports[0] + " lacks what report.html needs: " + error.what());
  }
  writeText(page, out / "compare.html");
  std::cout << comparisonText(comparison) << "written      " << (out / "compare.json").string()
            << ", compare.csv, numerics.csv, compare.html\n";
  return 0;
}

}  // namespace tpusim::cli
