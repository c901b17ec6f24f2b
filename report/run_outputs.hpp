// The files beside report.json in a run directory (docs/report-schema.md, "Files of a run"):
// per_op.csv, layers.csv, units.csv, timeline.csv, trace.json, report.html and, for a run on
// an ICI slice, links.csv, all made
// from report.json alone, so `tpusim run` writes them and `tpusim report DIR` remakes them.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tpusim {

// Reads DIR/report.json. Throws Error(kInvalidInput), one line, when DIR or the file is
// missing, the JSON does not parse, its schema_version is not this tpusim's, or it is not a
// simulation's report (a reference backend's, from tpusim reference).
nlohmann::ordered_json readRunReport(const std::string& dir);

// The views of `report`, as (file name, contents) in order: per_op.csv, layers.csv, units.csv,
// timeline.csv and trace.json (with an instruction timeline), report.html, links.csv (on a
// slice). A report that lacks a field the views need throws Error(kInvalidInput) naming it.
std::vector<std::pair<std::string, std::string>> reportViews(const nlohmann::ordered_json& report);

// Writes the views of `report` into `dir` and returns the file names written, in order.
// Without an instruction timeline (--no-instructions) timeline.csv and trace.json are
// not written and stale ones from an earlier run in `dir` are removed. A report that
// lacks a field the views need throws Error(kInvalidInput) naming it.
std::vector<std::string> writeReportViews(const nlohmann::ordered_json& report, const std::string& dir);

}  // namespace tpusim
