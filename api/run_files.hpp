// The files of a run directory, written by `tpusim run --out DIR` and `tpusim reference
// --out DIR` and by the Python module's run(out=DIR) and reference_report(out=DIR):
// report.json, the simulation's views (report/run_outputs.hpp) and the step's tensors as
// .npy files beside it, where `tpusim compare` reads them (docs/report.md).
#pragma once

#include <string>
#include <vector>

#include "api/reference_run.hpp"
#include "api/session.hpp"

namespace tpusim {

// Writes DIR/report.json, its views and, for a functional run, DIR/functional/*.npy.
// Returns the names of the views written. Error (kInvalidConfig) when DIR cannot be made.
std::vector<std::string> writeRunFiles(const RunOutcome& outcome, const std::string& dir);

// Writes DIR/report.json and the generated inputs and outputs as DIR/reference/*.npy.
void writeReferenceFiles(const ReferenceOutcome& outcome, const std::string& dir);

}  // namespace tpusim
