// report.json: the stable, versioned result of one simulated step
// (docs/report-schema.md documents every field). Built only from the Program and
// the stats registry and timeline of the run.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "sim/chip/driver.hpp"
#include "sim/common/params.hpp"
#include "traces/program.pb.h"

namespace tpusim {

inline constexpr int kReportSchemaVersion = 1;
// report.json's "kind", which tells it from a reference backend's report (api/reference_run.hpp).
inline constexpr const char* kSimulationReportKind = "simulation";

struct RunInfo {
  std::string model;
  ParamOverrides overrides;
  bool instruction_timeline = true;  // false: "ops" is left empty (the per-op and per-layer figures stay)
};

nlohmann::ordered_json buildReport(const program::Program& program, const SimResult& result, const HardwareParams& hw,
                                   const RunInfo& info);
// report.json's "stats": every registered stat with its value, unit and description.
nlohmann::ordered_json statsEntries(const StatsRegistry& registry);

// Writes `report` as indented JSON; the text is the same for the same inputs.
void writeReport(const nlohmann::ordered_json& report, const std::string& path);

// The human summary printed by `tpusim run`.
std::string summarizeReport(const nlohmann::ordered_json& report);

}  // namespace tpusim
