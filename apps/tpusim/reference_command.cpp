// `tpusim reference MODEL --backend cpu|cuda`: one step run for real, timed per
// op, written as DIR/report.json with its inputs and outputs in DIR/reference/*.npy.
#include <filesystem>
#include <iostream>

#include <boost/program_options.hpp>

#include "api/functional.hpp"
#include "api/reference_run.hpp"
#include "api/run_files.hpp"
#include "apps/tpusim/commands.hpp"
#include "apps/tpusim/model_options.hpp"
#include "report/report.hpp"
#include "sim/common/error.hpp"
#include "sim/common/log.hpp"

namespace tpusim::cli {

namespace po = boost::program_options;

int referenceCommand(const std::vector<std::string>& args) {
  ModelOptions o;
  std::string out_dir = "tpusim-reference";
  ReferenceRequest request;
  uint64_t seed = 0;
  int threads = 1;
  po::options_description desc = modelOptions(o);
  desc.add_options()("out", po::value(&out_dir)->default_value(out_dir), "directory for report.json")(
      "backend", po::value(&request.backend)->default_value(request.backend),
      "cpu, or cuda (an NVIDIA GPU; exit code 6 when none is found)")(
      "numerics", po::value(&request.numerics)->default_value(request.numerics),
      "reference (the kernels' own order) or mxu (matmuls as the preset's MXUs compute them)")(
      "seed", po::value(&seed)->default_value(seed),
      "seed of the generated inputs (as tpusim run --functional --seed)")(
      "threads", po::value(&threads)->default_value(threads), "CPU backend threads")(
      "replicas", po::value(&request.replicas)->default_value(request.replicas),
      "data parallel over this many replicas, each gradient summed across them (cuda: one GPU each, NCCL)")(
      "warmup", po::value(&request.timing.warmup)->default_value(request.timing.warmup),
      "untimed runs of the step before the timed ones")(
      "repeats", po::value(&request.timing.repeats)->default_value(request.timing.repeats),
      "timed runs; each op's time is its median over them");
  if (!parse(args, desc, "usage: tpusim reference MODEL [options]", true, &o.model)) return 0;
  setLogLevel(o.log_level);
  request.run = toRequest(o);
  request.run.seed = seed;
  request.run.threads = threads;
  const ReferenceOutcome outcome = runReferenceBackend(request);
  writeReferenceFiles(outcome, out_dir);
  const std::string report_path = (std::filesystem::path(out_dir) / "report.json").string();
  const nlohmann::ordered_json& r = outcome.report;
  std::cout << "model        " << r["model"].get<std::string>() << "  mode " << r["mode"].get<std::string>()
            << "  batch " << r["batch"].get<int64_t>() << "\n"
            << "backend      " << r["backend"].get<std::string>() << " (" << r["device"].get<std::string>()
            << "), numerics " << r["numerics"].get<std::string>() << "\n"
            << "step time    " << r["step_time_s"].get<double>() * 1e3 << " ms (sum of per-op medians of "
            << request.timing.repeats << " repeats)\n"
            << "report       " << report_path << "\n";
  return 0;
}

}  // namespace tpusim::cli
