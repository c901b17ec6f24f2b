#include "apps/tpusim/commands.hpp"
#include "apps/tpusim/keep_until_exit.hpp"
#include "apps/tpusim/model_options.hpp"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>

#include <unistd.h>

#include <boost/program_options.hpp>

#include "api/functional.hpp"
#include "api/progress.hpp"
#include "api/run_files.hpp"
#include "api/session.hpp"
#include "frontend/program_io.hpp"
#include "report/report.hpp"
#include "report/run_outputs.hpp"
#include "sim/common/error.hpp"
#include "sim/common/log.hpp"
#include "sim/common/params.hpp"

namespace tpusim::cli {

namespace po = boost::program_options;

namespace {

void printParams(const HardwareParams* hw) {
  std::printf("%-34s %-18s %-12s %s\n", "parameter", hw ? "value" : "default", "unit", "description");
  for (const ParamInfo& param : HardwareParams::declarations()) {
    const std::string value = hw ? hw->valueText(param) : param.default_text;
    std::printf("%-34s %-18s %-12s %s\n", param.name.c_str(), value.c_str(), param.unit.c_str(), param.doc.c_str());
  }
}

}  // namespace

int runCommand(const std::vector<std::string>& args) {
  ModelOptions o;
  std::string out_dir = "tpusim-out";
  po::options_description desc = modelOptions(o);
  bool no_instructions = false;
  bool functional = false;
  bool no_progress = false;
  desc.add_options()("out", po::value(&out_dir)->default_value(out_dir),
                     "directory for report.json, the CSVs, trace.json and report.html")(
      "functional", po::bool_switch(&functional),
      "also compute the step's values with the MXU's numerics; inputs and outputs go to DIR/functional/*.npy")(
      "no-instructions", po::bool_switch(&no_instructions),
      "leave the per-instruction list out of report.json (per-op and per-layer figures stay)")(
      "no-progress", po::bool_switch(&no_progress),
      "print no progress on stderr (otherwise a run past a second shows a bar on a terminal, a line each 10 s in a "
      "log)");
  addRunCommandOptions(desc, o);
  StrategyOptions strategy;
  addStrategyOptions(desc, strategy);
  if (!parse(args, desc, "usage: tpusim run MODEL [options]", true, &o.model)) return 0;
  setLogLevel(o.log_level);
  RunRequest request = toRequest(o);
  request.instruction_timeline = !no_instructions;
  request.functional = functional;
  applyStrategyOptions(strategy, request);
  if (!no_progress) request.progress = progressTo(std::cerr, isatty(STDERR_FILENO) != 0);
  RunOutcome outcome = runRequest(request);
  const std::string report_path = (std::filesystem::path(out_dir) / "report.json").string();
  const std::vector<std::string> views = writeRunFiles(outcome, out_dir);
  std::cout << summarizeReport(outcome.report);
  if (functional) {
    std::cout << "functional   " << outcome.functional_outputs.size() << " outputs and "
              << outcome.functional_inputs.size() << " generated inputs in "
              << (std::filesystem::path(out_dir) / "functional").string() << "\n";
  }
  // One line, starting "report ": the goldens leave it out, as it holds the directory.
  std::cout << "report       " << report_path << "; beside it";
  for (const std::string& name : views) std::cout << " " << name;
  if (no_instructions) std::cout << " (no timeline.csv, trace.json: --no-instructions)";
  std::cout << "\n";
  keepUntilExit(std::move(outcome.program));
  return 0;
}

int compileCommand(const std::vector<std::string>& args) {
  ModelOptions o;
  std::string output;
  po::options_description desc = modelOptions(o);
  desc.add_options()("output,o", po::value(&output), "Program file to write (.tpuprog binary, .tpuprog.txt text)");
  if (!parse(args, desc, "usage: tpusim compile MODEL -o FILE [options]", true, &o.model)) return 0;
  setLogLevel(o.log_level);
  if (output.empty()) throw Error(ErrorKind::kInvalidConfig, "compile needs -o FILE");
  if (!isProgramPath(output))
    throw Error(ErrorKind::kInvalidConfig,
                "-o must end in .tpuprog or .program.pb (binary), .tpuprog.txt or .pbtxt (text)");
  const RunRequest request = toRequest(o);
  const HardwareParams hw = resolveHardware(request);
  std::vector<PassTiming> timings;
  program::Program program = compileRequest(request, hw, &timings);
  writeProgram(program, output);
  std::cout << "wrote " << output << " (" << program.chips(0).instructions_size() << " instructions for " << hw.name()
            << ")\n";
  if (!timings.empty()) {
    double total = 0;
    for (const PassTiming& timing : timings) total += timing.seconds;
    std::printf("%-28s %10s %7s\n", "compile stage", "ms", "share");
    for (const PassTiming& timing : timings) {
      std::printf("%-28s %10.2f %6.1f%%\n", timing.name.c_str(), timing.seconds * 1e3,
                  total > 0 ? 100.0 * timing.seconds / total : 0.0);
    }
    std::printf("%-28s %10.2f\n", "total", total * 1e3);
  }
  keepUntilExit(std::move(program));
  return 0;
}

int hwCommand(const std::vector<std::string>& args) {
  const std::string usage = "usage: tpusim hw list | hw show PRESET [--set key=value] | hw params";
  if (args.empty()) throw Error(ErrorKind::kInvalidConfig, "missing hw subcommand (" + usage + ")");
  if (args[0] == "list") {
    for (const std::string& name : HardwareParams::presetNames()) {
      const HardwareParams hw = HardwareParams::load(name);
      std::printf("%-10s %s\n", name.c_str(), hw.config().description().c_str());
    }
    return 0;
  }
  if (args[0] == "params") {
    printParams(nullptr);
    return 0;
  }
  if (args[0] == "show") {
    std::vector<std::string> sets;
    std::string preset;
    po::options_description desc("options");
    desc.add_options()("help,h", "show this help")("set", po::value(&sets)->composing(),
                                                   "override a parameter: --set key=value (repeatable)");
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (!parse(rest, desc, usage, true, &preset)) return 0;
    HardwareParams hw = HardwareParams::load(preset);
    for (const std::string& set : sets) {
      const auto [key, value] = parseOverride(set);
      hw.set(key, value);
    }
    std::printf("%s: %s\n\n", hw.name().c_str(), hw.config().description().c_str());
    printParams(&hw);
    return 0;
  }
  throw Error(ErrorKind::kInvalidConfig, "unknown hw subcommand '" + args[0] + "' (" + usage + ")");
}

}  // namespace tpusim::cli
