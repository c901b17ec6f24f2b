// tpusim validate: every case of a measurement file (api/validation/measured_cases.hpp)
// built as a one-op model, compiled and simulated as a user's model would be, and set
// beside the time the real chip took (report/validation_report.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/validation/measured_cases.hpp"
#include "report/validation_report.hpp"
#include "sim/common/params.hpp"

namespace tpusim {

struct ValidateRequest {
  std::string cases_path;
  std::string hw = "tpuv4";  // preset name or .textproto path
  ParamOverrides overrides;  // --set key=value
  // Worker processes (1: this one). Each simulates its share of the cases in a process
  // of its own (SystemC keeps one simulation per process at a time).
  int jobs = 1;
  std::vector<std::string> families;  // only these ops; empty: all
  // Only the cases whose index is `part` modulo `parts` (a reproducible sample or half).
  uint64_t part = 0;
  uint64_t parts = 1;
};

struct ValidateResult {
  std::string hardware;  // the preset's name
  std::string source;    // the measurement file's "source"
  std::vector<ValidationCase> cases;
  std::vector<FamilyFit> fits;
};

// Simulates one case's one-op model on `hw`: the step's time in microseconds.
double simulateCase(const MeasuredCase& c, const HardwareParams& hw);

ValidateResult validate(const ValidateRequest& request);

// Writes validate.csv, validate.json and validate.html into `dir`; returns their names.
std::vector<std::string> writeValidateFiles(const ValidateResult& result, const std::string& dir);

}  // namespace tpusim
