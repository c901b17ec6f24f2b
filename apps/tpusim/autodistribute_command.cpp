// `tpusim autodistribute MODEL --topology SHAPE`: searches the data/tensor/pipeline-parallel
// degrees, micro-batches, remat and precision of a training step on a slice by simulation
// (api/auto_distribute.hpp), prints the ranked table, and writes DIR/autodistribute.json
// and DIR/autodistribute.csv. One progress line per plan goes to stderr. The plans are
// evaluated by --jobs worker processes, or over MPI ranks under mpirun (mpi_ranks.hpp);
// the files are the same bytes either way.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>

#include <boost/program_options.hpp>

#include "api/auto_distribute.hpp"
#include "apps/tpusim/commands.hpp"
#include "apps/tpusim/model_options.hpp"
#include "apps/tpusim/mpi_ranks.hpp"
#include "sim/common/error.hpp"
#include "sim/common/log.hpp"

namespace tpusim::cli {

namespace po = boost::program_options;

namespace {

std::vector<std::string> commaList(const std::string& flag, const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty()) throw Error(ErrorKind::kInvalidConfig, flag + " '" + text + "' has an empty value");
    items.push_back(item);
  }
  if (items.empty()) throw Error(ErrorKind::kInvalidConfig, flag + " needs at least one value");
  return items;
}

// "1,2,4": whole numbers only (the library checks their range).
std::vector<int64_t> commaIntegers(const std::string& flag, const std::string& text) {
  std::vector<int64_t> values;
  for (const std::string& item : commaList(flag, text)) {
    size_t used = 0;
    int64_t value = 0;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || used == 0) {
      throw Error(ErrorKind::kInvalidConfig, flag + " '" + text + "': '" + item + "' is not a whole number");
    }
    values.push_back(value);
  }
  return values;
}

void printProgress(const PlanResult& plan, size_t index, size_t total) {
  std::string outcome;
  if (plan.step_cycles && plan.reason.empty()) {
    outcome = std::to_string(*plan.step_cycles) + " cycles";
    if (plan.pipeline_bubble) outcome += ", bubble " + std::to_string(std::lround(100 * *plan.pipeline_bubble)) + "%";
  } else {
    outcome = plan.reason;
  }
  std::fprintf(stderr, "[%zu/%zu] %s: %s\n", index + 1, total, plan.label.c_str(), outcome.c_str());
}

}  // namespace

int autodistributeCommand(const std::vector<std::string>& args) {
  AutoDistributeRequest request;
  RunRequest& base = request.base;
  std::string out_dir = "tpusim-autodistribute";
  std::string model;
  std::string precisions = "float32,mixed_bfloat16,mixed_float16";
  std::string micro_batches = "2,4,8";
  std::string schedules = "1f1b";
  std::string log_level = "warn";
  std::vector<std::string> sets;
  int64_t batch = kBatchUnset;
  int jobs = 1;
  po::options_description desc("options");
  desc.add_options()("help,h", "show this help")(
      "topology", po::value(&base.topology), "the ICI slice to distribute over (4x4x4, of the preset's ici.topology)")(
      "hw", po::value(&base.hw)->default_value(base.hw), "hardware preset (tpusim hw list) or .textproto file")(
      "batch", po::value(&batch), "global batch, split over the data-parallel replicas (default 32 x chips)")(
      "memory-limit-gib", po::value<double>()->notifier([&request](double gib) { request.memory_limit_gib = gib; }),
      "HBM per chip a plan may use (default the preset's hbm.capacity_gib)")(
      "precisions", po::value(&precisions)->default_value(precisions), "precision policies to search, comma-separated")(
      "pp-degrees", po::value<std::string>()->notifier([&request](const std::string& text) {
        request.pp_degrees = commaIntegers("--pp-degrees", text);
      }),
      "pipeline degrees to search, comma-separated (default every divisor of the chips up to 8)")(
      "micro-batches", po::value(&micro_batches)->default_value(micro_batches),
      "micro-batch counts of the pipeline plans, comma-separated")(
      "pipeline-schedules", po::value(&schedules)->default_value(schedules),
      "schedules of the pipeline plans, comma-separated: 1f1b, gpipe")(
      "max-plans", po::value(&request.max_plans)->default_value(request.max_plans),
      "a larger search space is an error before any plan runs")(
      "optimizer", po::value(&base.optimizer)->default_value(base.optimizer), "sgd, momentum, adam, adagrad or lars")(
      "out", po::value(&out_dir)->default_value(out_dir), "directory for autodistribute.json and autodistribute.csv")(
      "jobs", po::value(&jobs)->default_value(jobs),
      "worker processes evaluating plans on this machine (per MPI rank under mpirun); the files do not depend on it")(
      "set", po::value(&sets)->composing(), "override a parameter: --set key=value (repeatable)")(
      "log-level", po::value(&log_level)->default_value(log_level), "trace, debug, info, warn, error, critical or off");
  if (!parse(args, desc, "usage: tpusim autodistribute MODEL --topology SHAPE [options]", true, &model)) return 0;
  setLogLevel(log_level);
  base.model_path = model;
  if (batch != kBatchUnset) {
    if (batch <= 0) throw Error(ErrorKind::kInvalidConfig, "--batch must be > 0");
    base.batch = batch;
  }
  request.precisions = commaList("--precisions", precisions);
  request.micro_batches = commaIntegers("--micro-batches", micro_batches);
  request.pipeline_schedules = commaList("--pipeline-schedules", schedules);
  for (const std::string& set : sets) base.overrides.push_back(parseOverride(set));

  checkJobs(jobs);

  return withCaseRunner(jobs, [&](const CaseRunner& runner) {
    spdlog::info("autodistribute: plans evaluated on {}", runner.describe());
    const std::optional<AutoDistributeResult> result =
        autoDistributeOn(runner, request, simulatingEvaluator(), printProgress);
    if (!result) return 0;  // another rank writes
    const std::string json_path = writeAutoDistributeFiles(*result, out_dir);
    std::cout << autoDistributeTable(*result) << "written      " << json_path << ", autodistribute.csv\n";
    if (!result->best()) {
      // Returned, not thrown: under mpirun the other ranks are done, and there is nothing to abort.
      std::cerr << "tpusim: error: no plan of " << result->model << " runs on " << result->topology
                << " within the memory limit (see " << json_path << ")\n";
      return exitCodeFor(ErrorKind::kResource);
    }
    return 0;
  });
}

}  // namespace tpusim::cli
