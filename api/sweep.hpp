// `tpusim sweep SPEC` and tpusim.sweep(spec) (docs/sweep.md): every case of a sweep spec
// (api/sweep_spec.hpp) simulated as one `tpusim run`, spread by a CaseRunner (this process,
// worker processes, or MPI ranks: api/case_runner.hpp), and gathered in case order into
// one row per case. The rows, and so sweep.csv and sweep.json, depend only on the spec:
// a case's result crosses processes as text and its numbers are printed from it the same
// way, so every spread writes the same bytes.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/case_runner.hpp"
#include "api/sweep_spec.hpp"

namespace tpusim {

struct SweepResult {
  // One per case, in case order: index, model, preset, sets, strategy, status ("ok" or
  // "error"), error (null when ok), and from the report step_cycles, step_time_s, mfu,
  // mxu_utilization, busiest_unit, busiest_utilization, hbm_peak_bytes,
  // hbm_bandwidth_utilization (null for a case that failed): docs/sweep.md.
  std::vector<nlohmann::ordered_json> rows;
  // With reports kept: each case's report.json text (empty for a case that failed).
  std::vector<std::string> reports;
  size_t failed() const;
};

// Called in the process that runs the runner as each of its cases finishes.
using SweepProgress = std::function<void(const nlohmann::ordered_json& row, size_t total)>;

// Runs `cases` with `runner`. Returns the rows in the process that gathers them (nothing in
// the other MPI ranks). A case that fails (its run's Error) is a row with its error; it
// does not stop the sweep. `keep_reports`: also gather each case's report.
std::optional<SweepResult> runSweep(const std::vector<SweepCase>& cases, const CaseRunner& runner, bool keep_reports,
                                    const SweepProgress& progress = nullptr);

// The row of a case from its report (exposed for tests).
nlohmann::ordered_json sweepRow(const SweepCase& c, const nlohmann::ordered_json& report);

nlohmann::ordered_json sweepJson(const SweepResult& result);
std::string sweepCsv(const SweepResult& result);
// The table the CLI prints: one line per case.
std::string sweepTable(const SweepResult& result);
// Writes DIR/sweep.json and DIR/sweep.csv, and with reports DIR/cases/<index>/ (each a run
// directory: report.json and its views, as tpusim run --no-instructions writes). Returns
// the paths of sweep.json and sweep.csv.
std::vector<std::string> writeSweepFiles(const SweepResult& result, const std::string& dir);
// "cases/0007": the folder of case 7's run directory among `count` cases (at least 4 digits).
std::string caseDirectory(size_t index, size_t count);

}  // namespace tpusim
