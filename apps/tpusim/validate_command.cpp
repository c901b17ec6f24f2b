// `tpusim validate CASES.json`: every measured case simulated as a one-op model and set
// beside the real chip's time; a table per op family, and DIR/validate.csv,
// validate.json and validate.html (docs/fidelity.md).
#include <iostream>

#include <boost/program_options.hpp>

#include "api/validation/validate.hpp"
#include "apps/tpusim/commands.hpp"
#include "apps/tpusim/model_options.hpp"
#include "sim/common/error.hpp"
#include "sim/common/log.hpp"

namespace tpusim::cli {

namespace po = boost::program_options;

namespace {

// "I/N": the cases whose index is I modulo N.
void parsePart(const std::string& text, ValidateRequest& request) {
  const size_t slash = text.find('/');
  try {
    if (slash == std::string::npos) throw std::invalid_argument("no slash");
    size_t used = 0;
    request.part = std::stoull(text.substr(0, slash), &used);
    if (used != slash) throw std::invalid_argument("trailing text");
    request.parts = std::stoull(text.substr(slash + 1), &used);
    if (used != text.size() - slash - 1) throw std::invalid_argument("trailing text");
  } catch (const std::exception&) {
    throw Error(ErrorKind::kInvalidConfig, "--part '" + text + "' is not I/N (e.g. 0/2: the even-numbered cases)");
  }
}

}  // namespace

int validateCommand(const std::vector<std::string>& args) {
  const std::string usage = "usage: tpusim validate CASES.json [--hw PRESET] [--jobs N] [--out DIR] [options]";
  ValidateRequest request;
  std::string out_dir = "tpusim-validate";
  std::vector<std::string> sets;
  std::string part;
  std::string log_level = "error";
  po::options_description desc("options");
  desc.add_options()("help,h", "show this help")("hw", po::value(&request.hw)->default_value(request.hw),
                                                 "hardware preset name or .textproto file")(
      "set", po::value(&sets)->composing(), "override a parameter: key=value (repeatable)")(
      "jobs,j", po::value(&request.jobs)->default_value(request.jobs),
      "worker processes that simulate the cases (use the machine's cores)")(
      "family", po::value(&request.families)->composing(), "only the cases of this op (repeatable)")(
      "part", po::value(&part), "only the cases whose index is I modulo N (I/N; 0/2 and 1/2 are the two halves)")(
      "out", po::value(&out_dir)->default_value(out_dir), "directory for validate.csv, validate.json, validate.html")(
      "log-level", po::value(&log_level)->default_value(log_level), "trace, debug, info, warn, error, critical or off");
  std::vector<std::string> files;
  if (!parsePositionals(args, desc, usage, "measurement file", 1, &files)) return 0;
  if (files.size() != 1) throw Error(ErrorKind::kInvalidConfig, "validate needs one measurement file (" + usage + ")");
  setLogLevel(log_level);
  request.cases_path = files[0];
  for (const std::string& set : sets) request.overrides.push_back(parseOverride(set));
  if (!part.empty()) parsePart(part, request);
  const ValidateResult result = validate(request);
  std::cout << "validate     " << result.cases.size() << " cases of " << request.cases_path << " on "
            << result.hardware << "\n"
            << validationTable(result.fits, result.cases);
  const std::vector<std::string> names = writeValidateFiles(result, out_dir);
  std::cout << "written      " << out_dir << ":";
  for (const std::string& name : names) std::cout << " " << name;
  std::cout << "\n";
  return 0;
}

}  // namespace tpusim::cli
