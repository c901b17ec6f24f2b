// `tpusim compare SIM_REPORT REF_REPORT`: reads a simulation report and a
// reference report, and the output tensors each wrote beside it (.npy files
// named in its "functional" or "outputs" section, relative to the report's
// folder), and builds compare.json (report/compare.hpp; docs/reference.md).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tpusim {

// Throws Error (kInvalidInput): a report or tensor file missing or malformed, a
// report of the wrong kind, reports of different models, modes, batches or seeds,
// an output whose shape differs between the two.
nlohmann::ordered_json compareReportFiles(const std::string& sim_report, const std::string& ref_report);

// A report file's JSON; Error (kInvalidInput) when it is missing or does not parse.
nlohmann::ordered_json readReportJson(const std::string& path);

}  // namespace tpusim
