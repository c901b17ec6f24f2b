// The CSV files written next to report.json (docs/report-schema.md, "CSV files"): the same
// figures as report.json's tables, one row per entry, for spreadsheets and pandas.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "report/utilization_windows.hpp"

namespace tpusim {

// One row per object of `rows` (an array, or an object whose keys go in `key_column`);
// the columns are every field of any row, in the order they first appear. Fields a row
// lacks are empty; strings are quoted when they hold a comma, a quote or a line break.
std::string objectsCsv(const nlohmann::ordered_json& rows, const std::string& key_column = "");

// per_op.csv, layers.csv, units.csv: report.json's "per_op", "layers" and "units".
std::string reportPerOpCsv(const nlohmann::ordered_json& report);
std::string reportLayersCsv(const nlohmann::ordered_json& report);
std::string reportUnitsCsv(const nlohmann::ordered_json& report);

// timeline.csv: one row per window (window, start_cycle, end_cycle, start_s), then one
// column per execution unit holding its utilization in that window.
std::string timelineCsv(const UtilizationWindows& windows, double clock_hz);

}  // namespace tpusim
