// `tpusim sweep SPEC`: runs every case of a sweep spec (api/sweep_spec.hpp, docs/sweep.md)
// as one simulated step, on this machine (--jobs worker processes) or over MPI ranks
// (mpirun -np N tpusim sweep SPEC), prints one line per case and writes DIR/sweep.json,
// DIR/sweep.csv and, with --reports, each case's run directory under DIR/cases/. One
// progress line per finished case goes to stderr.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <boost/program_options.hpp>

#include "api/sweep.hpp"
#include "apps/tpusim/commands.hpp"
#include "apps/tpusim/model_options.hpp"
#include "apps/tpusim/mpi_ranks.hpp"
#include "report/text_format.hpp"
#include "sim/common/error.hpp"
#include "sim/common/log.hpp"

namespace tpusim::cli {

namespace po = boost::program_options;

namespace {

void printProgress(const nlohmann::ordered_json& row, size_t total) {
  std::string outcome;
  if (row.at("status") == "ok") {
    outcome = withCommas(row.at("step_cycles").get<uint64_t>()) + " cycles";
  } else {
    outcome = row.at("error").get<std::string>();
  }
  std::string sets;
  for (const auto& set : row.at("sets")) {
    if (!sets.empty()) sets += ',';
    sets += set.get<std::string>();
  }
  std::fprintf(stderr, "case %zu of %zu (%s %s %s %s): %s\n", row.at("index").get<size_t>(), total,
               row.at("model").get<std::string>().c_str(), row.at("preset").get<std::string>().c_str(),
               sets.empty() ? "preset" : sets.c_str(), row.at("strategy").get<std::string>().c_str(), outcome.c_str());
}

}  // namespace

int sweepCommand(const std::vector<std::string>& args) {
  std::string spec_path;
  std::string out_dir = "tpusim-sweep";
  std::string log_level = "warn";
  int jobs = 1;
  bool reports = false;
  bool quiet = false;
  po::options_description desc("options");
  desc.add_options()("help,h", "show this help")("out", po::value(&out_dir)->default_value(out_dir),
                                                 "directory for sweep.json, sweep.csv and cases/")(
      "jobs", po::value(&jobs)->default_value(jobs),
      "worker processes on this machine (per MPI rank under mpirun); the files do not depend on it")(
      "reports", po::bool_switch(&reports),
      "also write each case's run directory, DIR/cases/NNNN/ (report.json and its views, without the "
      "instruction list)")("no-progress", po::bool_switch(&quiet), "no line per finished case on stderr")(
      "log-level", po::value(&log_level)->default_value(log_level), "trace, debug, info, warn, error, critical or off");
  std::vector<std::string> positionals;
  const std::string usage = "usage: [mpirun -np N] tpusim sweep SPEC [options] (docs/sweep.md)";
  if (!parsePositionals(args, desc, usage, "spec", 1, &positionals)) return 0;
  if (positionals.empty()) throw Error(ErrorKind::kInvalidConfig, "missing SPEC argument (" + usage + ")");
  spec_path = positionals.front();
  setLogLevel(log_level);
  checkJobs(jobs);

  // Every rank reads and checks the spec: a bad one fails everywhere before any case runs.
  const config::SweepSpec spec = readSweepSpec(spec_path);
  const std::vector<SweepCase> cases = sweepCases(spec, std::filesystem::path(spec_path).parent_path().string());
  return withCaseRunner(jobs, [&](const CaseRunner& runner) {
    spdlog::info("sweep: {} cases on {}", cases.size(), runner.describe());
    const std::optional<SweepResult> result = runSweep(cases, runner, reports, quiet ? nullptr : printProgress);
    if (!result) return 0;  // another rank writes
    const std::vector<std::string> written = writeSweepFiles(*result, out_dir);
    std::cout << sweepTable(*result) << "written      " << written[0] << ", sweep.csv" << (reports ? ", cases/" : "")
              << "\n";
    if (result->failed() == result->rows.size()) {
      std::cerr << "tpusim: error: every case of " << spec_path << " failed (see " << written[1]
                << "); case 0: " << result->rows[0].at("error").get<std::string>() << "\n";
      return exitCodeFor(ErrorKind::kInvalidConfig);
    }
    return 0;
  });
}

}  // namespace tpusim::cli
