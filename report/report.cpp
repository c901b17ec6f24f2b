#include "report/report.hpp"

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "sim/common/error.hpp"

namespace tpusim {

namespace {

const char* unitKindName(program::Unit unit) {
  switch (unit) {
    case program::MXU: return "mxu";
    case program::VPU: return "vpu";
    case program::DMA: return "dma";
    default: return "?";
  }
}

// A unit's stats group: every registered stat named "<unit>.<field>".
nlohmann::ordered_json unitEntry(const StatsRegistry& stats, const std::string& unit) {
  nlohmann::ordered_json entry;
  const std::string prefix = unit + ".";
  for (const StatEntry& stat : stats.entries()) {
    if (stat.name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string field = stat.name.substr(prefix.size());
    if (stat.is_formula) {
      entry[field] = stat.value();
    } else {
      entry[field] = stat.counter->value();
    }
  }
  return entry;
}

}  // namespace

nlohmann::ordered_json buildReport(const program::Program& program, const SimResult& result, const HardwareParams& hw,
                                   const RunInfo& info) {
  nlohmann::ordered_json report;
  report["schema_version"] = kReportSchemaVersion;
  report["model"] = info.model;
  report["hw"] = hw.name();
  report["mode"] = program.mode();
  report["batch"] = program.batch();
  nlohmann::ordered_json overrides = nlohmann::ordered_json::object();
  for (const auto& [key, value] : info.overrides) overrides[key] = value;
  report["overrides"] = overrides;
  report["total_cycles"] = result.total_cycles;
  report["clock_hz"] = result.clock_hz;
  report["step_time_s"] = static_cast<double>(result.total_cycles) / result.clock_hz;

  nlohmann::ordered_json units = nlohmann::ordered_json::object();
  for (const std::string& unit : result.timeline.unitNames()) units[unit] = unitEntry(*result.stats, unit);
  units["chip0.hbm"] = unitEntry(*result.stats, "chip0.hbm");
  report["units"] = units;

  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  const program::ChipProgram& chip = program.chips(0);
  for (const TimelineEvent& event : result.timeline.events()) {
    const program::Instruction& ins = chip.instructions(static_cast<int>(event.instruction));
    nlohmann::ordered_json op;
    op["name"] = ins.name();
    op["type"] = ins.op_type();
    op["op"] = ins.op();
    op["unit"] = result.timeline.unitNames()[event.unit];
    op["unit_kind"] = unitKindName(ins.unit());
    op["start_cycle"] = event.start_cycle;
    op["end_cycle"] = event.end_cycle;
    op["flops"] = ins.flops();
    op["bytes"] = ins.bytes();
    ops.push_back(op);
  }
  report["ops"] = ops;

  nlohmann::ordered_json stats = nlohmann::ordered_json::array();
  for (const StatEntry& stat : result.stats->entries()) {
    nlohmann::ordered_json entry;
    entry["name"] = stat.name;
    if (stat.is_formula) {
      entry["value"] = stat.value();
    } else {
      entry["value"] = stat.counter->value();
    }
    entry["unit"] = stat.unit;
    entry["description"] = stat.description;
    stats.push_back(entry);
  }
  report["stats"] = stats;
  return report;
}

void writeReport(const nlohmann::ordered_json& report, const std::string& path) {
  std::ofstream file(path, std::ios::trunc);
  if (!file) throw Error(ErrorKind::kInvalidConfig, "cannot write report '" + path + "'");
  file << report.dump(2) << "\n";
  if (!file) throw Error(ErrorKind::kInvalidConfig, "failed writing report '" + path + "'");
}

std::string summarizeReport(const nlohmann::ordered_json& report) {
  std::ostringstream out;
  char line[256];
  const double step = report["step_time_s"].get<double>();
  out << "model        " << report["model"].get<std::string>() << "\n";
  out << "hardware     " << report["hw"].get<std::string>() << "  mode " << report["mode"].get<std::string>()
      << "  batch " << report["batch"].get<uint64_t>() << "\n";
  std::snprintf(line, sizeof(line), "total cycles %llu\nstep time    %.3f us at %.0f MHz\n",
                static_cast<unsigned long long>(report["total_cycles"].get<uint64_t>()), step * 1e6,
                report["clock_hz"].get<double>() / 1e6);
  out << line;
  out << "unit                     busy cycles  utilization\n";
  for (const auto& [name, unit] : report["units"].items()) {
    std::snprintf(line, sizeof(line), "%-24s %11llu  %10.1f%%\n", name.c_str(),
                  static_cast<unsigned long long>(unit["busy_cycles"].get<uint64_t>()),
                  unit["utilization"].get<double>() * 100.0);
    out << line;
  }
  // The unit busy longest is where a step's time goes first; ties keep report order.
  std::string busiest;
  double highest = -1;
  for (const auto& [name, unit] : report["units"].items()) {
    const double utilization = unit["utilization"].get<double>();
    if (utilization > highest) {
      highest = utilization;
      busiest = name;
    }
  }
  std::snprintf(line, sizeof(line), "busiest unit %s (%.1f%% of the step)\n", busiest.c_str(), highest * 100.0);
  out << line;
  return out.str();
}

}  // namespace tpusim
