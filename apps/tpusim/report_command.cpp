// `tpusim report RUN_DIR`: remakes the CSVs, trace.json and report.html of a run
// directory from its report.json (docs/report-schema.md, "Files of a run").
#include <iostream>

#include <boost/program_options.hpp>

#include "apps/tpusim/commands.hpp"
#include "apps/tpusim/model_options.hpp"
#include "report/run_outputs.hpp"
#include "sim/common/error.hpp"

namespace tpusim::cli {

namespace po = boost::program_options;

int reportCommand(const std::vector<std::string>& args) {
  const std::string usage = "usage: tpusim report RUN_DIR (a directory holding report.json, e.g. tpusim run --out)";
  po::options_description desc("options");
  desc.add_options()("help,h", "show this help");
  std::vector<std::string> dirs;
  if (!parsePositionals(args, desc, usage, "run_dir", 1, &dirs)) return 0;
  const std::string dir = dirs.empty() ? std::string() : dirs.front();
  if (dir.empty()) throw Error(ErrorKind::kInvalidConfig, "missing RUN_DIR argument (" + usage + ")");
  const auto report = readRunReport(dir);
  std::vector<std::string> written;
  try {
    written = writeReportViews(report, dir);
  } catch (const Error& error) {
    throw error.within(dir);
  }
  std::cout << "wrote";
  for (const std::string& name : written) std::cout << " " << name;
  std::cout << " in " << dir << "\n";
  if (written.size() < 6)
    std::cout << "no instruction timeline in report.json (--no-instructions): no timeline.csv or trace.json\n";
  return 0;
}

}  // namespace tpusim::cli
