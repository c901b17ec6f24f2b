#include "report/report.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <sstream>

#include "report/cmem_section.hpp"
#include "report/instruction_ops.hpp"
#include "report/interconnect_section.hpp"
#include "report/memory_timeline.hpp"
#include "report/mfu_section.hpp"
#include "report/peaks_section.hpp"
#include "report/step_breakdown.hpp"
#include "sim/common/atomic_file.hpp"
#include "sim/common/error.hpp"
#include "traces/program_format.hpp"

namespace tpusim {

namespace {

const char* unitKindName(program::Unit unit) {
  switch (unit) {
    case program::MXU: return "mxu";
    case program::VPU: return "vpu";
    case program::DMA: return "dma";
    case program::ICI: return "ici";
    default: return "?";
  }
}

// A unit's stats group: every registered stat named "<unit>.<field>".
// A registered stat's value as JSON: a count for a counter, a number for a formula.
nlohmann::ordered_json statJson(const StatEntry& stat) {
  if (stat.is_formula) return stat.value();
  return stat.counter->value();
}

nlohmann::ordered_json unitEntry(const StatsRegistry& stats, const std::string& unit) {
  nlohmann::ordered_json entry;
  const std::string prefix = unit + ".";
  for (const StatEntry& stat : stats.entries()) {
    if (stat.name.compare(0, prefix.size(), prefix) != 0) continue;
    entry[stat.name.substr(prefix.size())] = statJson(stat);
  }
  return entry;
}

nlohmann::ordered_json memoryEntry(const program::ChipProgram& chip, const HardwareParams& hw) {
  const program::MemoryPlanSummary& memory = chip.memory();
  nlohmann::ordered_json entry;
  entry["capacity_bytes"] = static_cast<uint64_t>(hw.config().hbm().capacity_gib() * 1024.0 * 1024.0 * 1024.0);
  entry["peak_bytes"] = memory.peak_bytes();
  entry["live_peak_bytes"] = memory.live_peak_bytes();
  entry["live_peak_op"] = memory.live_peak_op();
  entry["persistent_bytes"] = memory.persistent_bytes();
  entry["unplanned_bytes"] = memory.unplanned_bytes();
  entry["scratch_bytes"] = memory.scratch_bytes();
  // What the step's HBM tensors are, by role (before buffer reuse).
  nlohmann::ordered_json roles = nlohmann::ordered_json::object();
  for (const program::BufferRole role :
       {program::INPUT, program::WEIGHT, program::ACTIVATION, program::GRADIENT, program::OPTIMIZER_STATE}) {
    uint64_t bytes = 0;
    for (const program::Buffer& buffer : chip.buffers()) {
      if (buffer.space() == program::HBM && buffer.role() == role) bytes += buffer.bytes();
    }
    std::string name = program::BufferRole_Name(role);
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    roles[name] = bytes;
  }
  entry["bytes_by_role"] = roles;
  // The most VMEM one op holds at once on a core, and which op.
  uint64_t vmem_peak = 0;
  std::string vmem_op;
  for (const program::OpLowering& op : chip.ops()) {
    if (op.vmem_bytes() > vmem_peak) vmem_peak = op.vmem_bytes(), vmem_op = op.op();
  }
  entry["vmem_capacity_bytes"] = static_cast<uint64_t>(hw.config().vmem().capacity_mib() * 1024.0 * 1024.0);
  entry["vmem_peak_bytes"] = vmem_peak;
  entry["vmem_peak_op"] = vmem_op;
  return entry;
}

// The chip's HBM over the step: its model, the bandwidth it delivered against its peak,
// and, for the DRAM models, what the DRAM did (bursts, row hits, commands).
nlohmann::ordered_json hbmEntry(const SimResult& result, const HardwareParams& hw) {
  const config::HbmConfig& hbm = hw.config().hbm();
  const StatsRegistry& stats = *result.stats;
  const std::string prefix = "chip0.hbm.";
  nlohmann::ordered_json entry;
  entry["model"] = hbm.model();
  // The DRAM models (dram, dram_memoized) declare the DRAM behind the HBM; the bandwidth model has none.
  const bool dram = stats.kindOf(prefix + "dram") == UnitKind::kDram;
  if (dram) {
    entry["dram_preset"] = hbm.dram_preset();
    entry["stacks"] = hbm.stacks();
    entry["pin_gbps"] = hbm.pin_gbps();
  }
  entry["peak_gbps"] = hbm.bandwidth_gbps();
  const auto read = static_cast<uint64_t>(stats.value(prefix + "bytes_read"));
  const auto written = static_cast<uint64_t>(stats.value(prefix + "bytes_written"));
  entry["bytes_read"] = read;
  entry["bytes_written"] = written;
  entry["transfers"] = static_cast<uint64_t>(stats.value(prefix + "transfers"));
  const double seconds = static_cast<double>(result.total_cycles) / result.clock_hz;
  entry["achieved_gbps"] = seconds > 0 ? static_cast<double>(read + written) / seconds / 1e9 : 0.0;
  entry["bandwidth_utilization"] = stats.value(prefix + "bandwidth_utilization");
  if (!dram) return entry;
  for (const char* field : {"row_hit_rate", "row_hits", "row_misses", "row_conflicts", "activates", "precharges",
                            "refreshes", "reads", "writes"}) {
    entry[field] = statJson(stats.at(prefix + "dram." + field));
  }
  // The memoizing DRAM model (dram_memoized) also counts what its memo of transfer times did.
  if (const StatEntry* simulated = stats.find(prefix + "dram.memo_simulated")) {
    entry["memo_simulated"] = simulated->counter->value();
    entry["memo_reused"] = stats.at(prefix + "dram.memo_reused").counter->value();
  }
  return entry;
}

// Each DMA engine over the step: what it moved and how long it had a transfer in flight.
nlohmann::ordered_json dmaEntries(const SimResult& result) {
  const StatsRegistry& stats = *result.stats;
  nlohmann::ordered_json engines = nlohmann::ordered_json::array();
  for (const std::string& unit : result.timeline.unitNames()) {
    if (stats.kindOf(unit) != UnitKind::kDma) continue;
    const auto busy = static_cast<uint64_t>(stats.value(unit + ".busy_cycles"));
    nlohmann::ordered_json entry;
    entry["engine"] = unit;
    entry["bytes"] = static_cast<uint64_t>(stats.value(unit + ".bytes"));
    entry["transfers"] = static_cast<uint64_t>(stats.value(unit + ".instructions"));
    entry["busy_cycles"] = busy;
    entry["busy_time_s"] = static_cast<double>(busy) / result.clock_hz;
    entry["utilization"] = stats.value(unit + ".utilization");
    entry["peak_in_flight"] = static_cast<uint64_t>(stats.value(unit + ".peak_in_flight"));
    engines.push_back(entry);
  }
  return engines;
}

struct PerOp {
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
};

// What each IR op (and each layer) cost: busy cycles per unit kind, summed over the
// chip's units, and the cycles its busiest kind needs at the least (busy cycles per
// unit of that kind): the op's time if nothing overlapped it.
PerOp perOpEntries(const program::ChipProgram& chip, const InstructionOps& ops, const SimResult& result,
                   const HardwareParams& hw) {
  struct Totals {
    uint64_t instructions = 0, mxu = 0, vpu = 0, dma = 0, flops = 0, hbm_bytes = 0;
    uint64_t mxu_wait = 0, folds = 0, macs = 0, stream = 0, stall = 0, fill_drain = 0;
    uint64_t start = UINT64_MAX, end = 0;
  };
  const config::HardwareConfig& config = hw.config();
  const double cores = static_cast<double>(config.chip().tensor_cores());
  const double units[3] = {cores * static_cast<double>(config.mxu().per_core()), cores,
                           cores * static_cast<double>(config.dma().engines_per_core())};
  const char* kinds[3] = {"mxu", "vpu", "dma"};
  const double pes = static_cast<double>(config.mxu().rows() * config.mxu().cols());
  const auto bound = [&](const Totals& t, nlohmann::ordered_json& entry) {
    const double per_unit[3] = {static_cast<double>(t.mxu) / units[0], static_cast<double>(t.vpu) / units[1],
                                static_cast<double>(t.dma) / units[2]};
    int kind = 0;
    for (int k = 1; k < 3; ++k) {
      if (per_unit[k] > per_unit[kind]) kind = k;
    }
    entry["bound_by"] = kinds[kind];
    entry["bound_cycles"] = static_cast<uint64_t>(per_unit[kind] + 0.5);
  };
  const auto fill = [&](const Totals& t, nlohmann::ordered_json& entry) {
    entry["instructions"] = t.instructions;
    entry["start_cycle"] = t.start == UINT64_MAX ? 0 : t.start;
    entry["end_cycle"] = t.end;
    entry["mxu_busy_cycles"] = t.mxu;
    entry["vpu_busy_cycles"] = t.vpu;
    entry["dma_busy_cycles"] = t.dma;
    entry["flops"] = t.flops;
    entry["hbm_bytes"] = t.hbm_bytes;
    if (t.mxu > 0) {
      entry["mxu_folds"] = t.folds;
      entry["mxu_stream_cycles"] = t.stream;
      entry["mxu_weight_load_stall_cycles"] = t.stall;
      entry["mxu_fill_drain_cycles"] = t.fill_drain;
      entry["mxu_operand_wait_cycles"] = t.mxu_wait;
      entry["mxu_mac_utilization"] = static_cast<double>(t.macs) / (pes * static_cast<double>(t.mxu));
    }
    bound(t, entry);
  };
  std::vector<Totals> totals(static_cast<size_t>(chip.ops_size()));
  for (const TimelineEvent& event : result.timeline.events()) {
    const int op = ops.op_of[static_cast<size_t>(event.instruction)];
    if (op >= chip.ops_size()) continue;  // no lowering record
    const program::Instruction& ins = chip.instructions(static_cast<int>(event.instruction));
    Totals& t = totals[static_cast<size_t>(op)];
    const uint64_t busy = event.end_cycle - event.start_cycle;
    ++t.instructions;
    t.start = std::min(t.start, event.start_cycle);
    t.end = std::max(t.end, event.end_cycle);
    if (ins.unit() == program::MXU) {
      t.mxu += busy;
      t.mxu_wait += event.wait_cycles;
      t.folds += event.folds, t.macs += event.macs, t.stream += event.stream_cycles;
      t.stall += event.stall_cycles, t.fill_drain += event.fill_drain_cycles;
    }
    if (ins.unit() == program::VPU) t.vpu += busy;
    if (ins.unit() == program::DMA) {
      t.dma += busy;
      t.hbm_bytes += ins.bytes();
    } else {
      t.flops += ins.flops();
    }
  }
  PerOp out;
  std::vector<std::string> layer_order;
  std::map<std::string, std::pair<Totals, uint64_t>> layers;  // totals and op count
  for (int i = 0; i < chip.ops_size(); ++i) {
    const program::OpLowering& lowering = chip.ops(i);
    const Totals& t = totals[static_cast<size_t>(i)];
    nlohmann::ordered_json entry;
    entry["op"] = lowering.op();
    entry["type"] = lowering.op_type();
    entry["layer"] = lowering.layer();
    entry["tiling"] = lowering.tiling();
    entry["tiles"] = lowering.tiles();
    entry["vmem_bytes"] = lowering.vmem_bytes();
    if (lowering.mxu_mapping_efficiency() > 0) entry["mxu_mapping_efficiency"] = lowering.mxu_mapping_efficiency();
    fill(t, entry);
    out.ops.push_back(entry);
    auto [it, inserted] = layers.try_emplace(lowering.layer());
    if (inserted) layer_order.push_back(lowering.layer());
    Totals& sum = it->second.first;
    ++it->second.second;
    sum.instructions += t.instructions;
    sum.start = std::min(sum.start, t.start);
    sum.end = std::max(sum.end, t.end);
    sum.mxu += t.mxu, sum.vpu += t.vpu, sum.dma += t.dma, sum.flops += t.flops, sum.hbm_bytes += t.hbm_bytes;
    sum.mxu_wait += t.mxu_wait, sum.folds += t.folds, sum.macs += t.macs, sum.stream += t.stream;
    sum.stall += t.stall, sum.fill_drain += t.fill_drain;
  }
  for (const std::string& name : layer_order) {
    nlohmann::ordered_json entry;
    entry["layer"] = name;
    entry["ops"] = layers[name].second;
    fill(layers[name].first, entry);
    out.layers.push_back(entry);
  }
  return out;
}

// The MXUs over the step, and the ops that keep them busiest: how much of the
// array each op's shape can use (mapping efficiency) and how much it did use
// while it ran (MAC utilization), with the busy time split by cause.
void appendMxuSummary(const nlohmann::ordered_json& report, std::ostringstream& out) {
  if (!report.contains("per_op")) return;
  uint64_t busy = 0, stream = 0, stall = 0, fill_drain = 0;
  std::vector<std::pair<uint64_t, size_t>> order;
  const auto& ops = report["per_op"];
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!ops[i].contains("mxu_folds")) continue;
    const uint64_t op_busy = ops[i]["mxu_busy_cycles"].get<uint64_t>();
    busy += op_busy;
    stream += ops[i]["mxu_stream_cycles"].get<uint64_t>();
    stall += ops[i]["mxu_weight_load_stall_cycles"].get<uint64_t>();
    fill_drain += ops[i]["mxu_fill_drain_cycles"].get<uint64_t>();
    order.emplace_back(op_busy, i);
  }
  if (busy == 0) return;
  double macs = 0, units = 0;
  for (const auto& [name, unit] : report["units"].items()) {
    if (!unit.contains("mac_utilization")) continue;
    macs += unit["mac_utilization"].get<double>();
    units += 1;
  }
  char line[256];
  const double b = static_cast<double>(busy);
  std::snprintf(line, sizeof(line),
                "MXU          MAC utilization %.1f%% of the step; busy time %.1f%% streaming, %.1f%% weight-load "
                "stall, %.1f%% fill/drain\n",
                units ? 100.0 * macs / units : 0.0, 100.0 * static_cast<double>(stream) / b,
                100.0 * static_cast<double>(stall) / b, 100.0 * static_cast<double>(fill_drain) / b);
  out << line;
  std::stable_sort(order.begin(), order.end(), [](auto& x, auto& y) { return x.first > y.first; });
  out << "top MXU ops (busy cycles over all MXUs, mapping efficiency, MAC utilization while busy)\n";
  for (size_t i = 0; i < std::min<size_t>(5, order.size()); ++i) {
    const auto& op = ops[order[i].second];
    const double mapping = op.contains("mxu_mapping_efficiency") ? op["mxu_mapping_efficiency"].get<double>() : 0.0;
    std::snprintf(line, sizeof(line), "  %-40s %11llu  %5.1f%%  %5.1f%%\n", op["op"].get<std::string>().c_str(),
                  static_cast<unsigned long long>(order[i].first), 100.0 * mapping,
                  100.0 * op["mxu_mac_utilization"].get<double>());
    out << line;
  }
}

}  // namespace

nlohmann::ordered_json buildReport(const program::Program& program, const SimResult& result, const HardwareParams& hw,
                                   const RunInfo& info) {
  nlohmann::ordered_json report;
  report["schema_version"] = kReportSchemaVersion;
  report["kind"] = kSimulationReportKind;
  report["model"] = info.model;
  report["hw"] = hw.name();
  report["mode"] = program.mode();
  report["batch"] = program.batch();
  if (!program.precision().empty()) report["precision"] = program.precision();
  if (!program.loss().empty()) report["loss"] = program.loss();
  nlohmann::ordered_json overrides = nlohmann::ordered_json::object();
  for (const auto& [key, value] : info.overrides) overrides[key] = value;
  report["overrides"] = overrides;
  report["total_cycles"] = result.total_cycles;
  report["clock_hz"] = result.clock_hz;
  report["step_time_s"] = static_cast<double>(result.total_cycles) / result.clock_hz;

  nlohmann::ordered_json units = nlohmann::ordered_json::object();
  for (const std::string& unit : result.timeline.unitNames()) units[unit] = unitEntry(*result.stats, unit);
  units["chip0.hbm"] = unitEntry(*result.stats, "chip0.hbm");
  if (result.stats->kindOf("chip0.cmem") == UnitKind::kCmem)
    units["chip0.cmem"] = unitEntry(*result.stats, "chip0.cmem");
  report["units"] = units;

  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  const program::ChipProgram& chip = program.chips(0);
  const InstructionOps op_numbers = instructionOps(chip);
  for (const TimelineEvent& event : result.timeline.events()) {
    if (!info.instruction_timeline) break;
    const program::Instruction& ins = chip.instructions(static_cast<int>(event.instruction));
    nlohmann::ordered_json op;
    op["name"] = instructionName(ins);
    op["type"] = op_numbers.opType(chip, static_cast<int>(event.instruction));
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
  report["memory"] = memoryEntry(chip, hw);
  report["memory_timeline"] =
      memoryTimelineSection(memoryTimeline(chip, op_numbers, result.timeline, result.total_cycles));
  report["hbm"] = hbmEntry(result, hw);
  report["dma"] = dmaEntries(result);
  const PerOp per_op = perOpEntries(chip, op_numbers, result, hw);
  report["per_op"] = per_op.ops;
  report["layers"] = per_op.layers;
  report["cmem"] = cmemSection(chip, result, hw);
  if (result.ici) report["interconnect"] = interconnectEntry(program, result);
  if (result.ici) report["parallelism"] = parallelismEntry(program);
  report["step_breakdown"] = stepBreakdownSection(stepBreakdown(chip, result.timeline, result.total_cycles));
  report["peaks"] = peaksSection(hw);
  const nlohmann::ordered_json mfu = mfuSectionOf(program, hw, report["step_time_s"].get<double>());
  if (!mfu.is_null()) report["mfu"] = mfu;

  report["stats"] = statsEntries(*result.stats);
  return report;
}

nlohmann::ordered_json statsEntries(const StatsRegistry& registry) {
  nlohmann::ordered_json stats = nlohmann::ordered_json::array();
  for (const StatEntry& stat : registry.entries()) {
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
  return stats;
}

void writeReport(const nlohmann::ordered_json& report, const std::string& path) {
  writeFileAtomically(path, report.dump(2) + "\n");
}

std::string summarizeReport(const nlohmann::ordered_json& report) {
  std::ostringstream out;
  char line[256];
  const double step = report["step_time_s"].get<double>();
  out << "model        " << report["model"].get<std::string>() << "\n";
  out << "hardware     " << report["hw"].get<std::string>() << "  mode " << report["mode"].get<std::string>()
      << "  batch " << report["batch"].get<uint64_t>() << "\n";
  if (report.contains("loss")) out << "loss         " << report["loss"].get<std::string>() << "\n";
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
  if (report.contains("step_breakdown")) {
    const auto& shares = report["step_breakdown"]["shares"];
    std::snprintf(line, sizeof(line),
                  "step split   compute %.1f%%, exposed memory %.1f%%, exposed communication %.1f%%, host stall "
                  "%.1f%%, idle %.1f%%: %s\n",
                  shares["compute"].get<double>() * 100.0, shares["exposed_memory"].get<double>() * 100.0,
                  shares["exposed_communication"].get<double>() * 100.0,
                  shares["host_input_stall"].get<double>() * 100.0, shares["idle"].get<double>() * 100.0,
                  report["step_breakdown"]["bottleneck"].get<std::string>().c_str());
    out << line;
  }
  if (report.contains("memory") && report["memory"]["peak_bytes"].get<uint64_t>() > 0) {
    const auto& memory = report["memory"];
    const double gib = 1024.0 * 1024.0 * 1024.0;
    std::snprintf(line, sizeof(line), "HBM peak     %.3f GiB of %.3f GiB (%.3f GiB without reuse)\n",
                  static_cast<double>(memory["peak_bytes"].get<uint64_t>()) / gib,
                  static_cast<double>(memory["capacity_bytes"].get<uint64_t>()) / gib,
                  static_cast<double>(memory["unplanned_bytes"].get<uint64_t>()) / gib);
    out << line;
    const auto& roles = memory["bytes_by_role"];
    const auto role = [&](const char* name) { return static_cast<double>(roles[name].get<uint64_t>()) / gib; };
    std::snprintf(line, sizeof(line),
                  "HBM tensors  weights %.3f, gradients (weights and activations) %.3f, optimizer state %.3f, "
                  "activations %.3f, inputs "
                  "%.3f GiB\n",
                  role("weight"), role("gradient"), role("optimizer_state"), role("activation"), role("input"));
    out << line;
    const double mib = 1024.0 * 1024.0;
    std::snprintf(line, sizeof(line), "VMEM peak    %.3f MiB of %.3f MiB per core (%s)\n",
                  static_cast<double>(memory["vmem_peak_bytes"].get<uint64_t>()) / mib,
                  static_cast<double>(memory["vmem_capacity_bytes"].get<uint64_t>()) / mib,
                  memory["vmem_peak_op"].get<std::string>().c_str());
    out << line;
  }
  if (report.contains("hbm")) {
    const auto& hbm = report["hbm"];
    const std::string model = hbm["model"].get<std::string>();
    std::snprintf(line, sizeof(line), "HBM traffic  %.1f GB/s of %.0f GB/s (%.1f%% of peak), %s model",
                  hbm["achieved_gbps"].get<double>(), hbm["peak_gbps"].get<double>(),
                  100.0 * hbm["bandwidth_utilization"].get<double>(), model.c_str());
    out << line;
    if (hbm.contains("row_hit_rate")) {
      std::snprintf(line, sizeof(line), " (%s x %lld): row hits %.1f%%, %llu ACT, %llu REF",
                    hbm["dram_preset"].get<std::string>().c_str(), static_cast<long long>(hbm["stacks"].get<int64_t>()),
                    100.0 * hbm["row_hit_rate"].get<double>(),
                    static_cast<unsigned long long>(hbm["activates"].get<uint64_t>()),
                    static_cast<unsigned long long>(hbm["refreshes"].get<uint64_t>()));
      out << line;
    }
    out << "\n";
  }
  // The layers that need the most time, by their busiest unit kind.
  if (report.contains("layers") && !report["layers"].empty()) {
    std::vector<std::pair<uint64_t, size_t>> order;
    const auto& layers = report["layers"];
    uint64_t total = 0;
    for (size_t i = 0; i < layers.size(); ++i) {
      order.emplace_back(layers[i]["bound_cycles"].get<uint64_t>(), i);
      total += order.back().first;
    }
    std::stable_sort(order.begin(), order.end(), [](auto& a, auto& b) { return a.first > b.first; });
    out << "top layers (cycles their busiest unit kind needs, share of the sum over layers)\n";
    for (size_t i = 0; i < std::min<size_t>(5, order.size()); ++i) {
      const auto& layer = layers[order[i].second];
      std::snprintf(line, sizeof(line), "  %-40s %11llu  %5.1f%%  %s\n", layer["layer"].get<std::string>().c_str(),
                    static_cast<unsigned long long>(order[i].first),
                    total ? 100.0 * static_cast<double>(order[i].first) / static_cast<double>(total) : 0.0,
                    layer["bound_by"].get<std::string>().c_str());
      out << line;
    }
  }
  appendMxuSummary(report, out);
  if (report.contains("mfu")) {
    const auto& mfu = report["mfu"];
    std::snprintf(line, sizeof(line),
                  "MFU          %.1f%%: %.4g model TFLOP per step over %llu chip%s, %.1f of %.1f TFLOP/s per chip\n",
                  100.0 * mfu["mfu"].get<double>(), mfu["model_flops"].get<double>() * 1e-12,
                  static_cast<unsigned long long>(mfu["chips"].get<uint64_t>()),
                  mfu["chips"].get<uint64_t>() == 1 ? "" : "s", mfu["model_flops_per_s_per_chip"].get<double>() * 1e-12,
                  mfu["peak_flops_per_s_per_chip"].get<double>() * 1e-12);
    out << line;
  }
  appendCmemSummary(report, out);
  if (report.contains("interconnect")) {
    const auto& ici = report["interconnect"];
    // "replicas" counts the chips that run the Program; under tensor parallelism they are not
    // data-parallel replicas, so the line names chips and the dp x tp split.
    const uint64_t tp = report.contains("parallelism") ? report["parallelism"]["tp"].get<uint64_t>() : 1;
    const uint64_t chips = ici["replicas"].get<uint64_t>();
    std::snprintf(
        line, sizeof(line),
        "ICI          %s %s, %llu chips (dp %llu x tp %llu, global batch %llu): %llu collectives of %.3f MiB, "
        "in flight %llu cycles, exposed %llu; links %.1f%% busy on average, %.1f%% the busiest\n",
        ici["topology"].get<std::string>().c_str(), ici["shape"].get<std::string>().c_str(),
        static_cast<unsigned long long>(chips), static_cast<unsigned long long>(chips / tp),
        static_cast<unsigned long long>(tp), static_cast<unsigned long long>(ici["global_batch"].get<uint64_t>()),
        static_cast<unsigned long long>(ici["collective_count"].get<uint64_t>()),
        static_cast<double>(ici["collective_bytes"].get<uint64_t>()) / (1024.0 * 1024.0),
        static_cast<unsigned long long>(ici["communication_cycles"].get<uint64_t>()),
        static_cast<unsigned long long>(ici["exposed_communication_cycles"].get<uint64_t>()),
        100.0 * ici["mean_link_utilization"].get<double>(), 100.0 * ici["max_link_utilization"].get<double>());
    out << line;
  }
  if (report.contains("pipeline")) {
    const auto& p = report["pipeline"];
    std::snprintf(
        line, sizeof(line),
        "pipeline     %s, %llu stages of %llu layers on %s blocks, %llu micro-batches of %llu: step %llu "
        "cycles (%.3f us), bubble %.1f%% (equal stages: %.1f%%); the rest of this summary is stage 0, "
        "one micro-batch\n",
        p["schedule"].get<std::string>().c_str(), static_cast<unsigned long long>(p["stages"].get<uint64_t>()),
        static_cast<unsigned long long>(p["layers"].get<uint64_t>() / p["stages"].get<uint64_t>()),
        p["stage_block"].get<std::string>().c_str(),
        static_cast<unsigned long long>(p["micro_batches"].get<uint64_t>()),
        static_cast<unsigned long long>(p["micro_batch_size"].get<uint64_t>()),
        static_cast<unsigned long long>(p["step_cycles"].get<uint64_t>()), p["step_time_s"].get<double>() * 1e6,
        100.0 * p["bubble"].get<double>(), 100.0 * p["ideal_bubble"].get<double>());
    out << line;
  }
  if (report.contains("host")) {
    const auto& h = report["host"];
    std::snprintf(line, sizeof(line),
                  "host         %llu steps: %.3f ms per step (compute %.3f ms), device busy %.1f%%, MXU MAC "
                  "utilization %.1f%% over the run; bottleneck: %s\n",
                  static_cast<unsigned long long>(h["steps"].get<uint64_t>()), h["mean_step_s"].get<double>() * 1e3,
                  h["step_compute_s"].get<double>() * 1e3, h["device_utilization"].get<double>() * 100.0,
                  h["mxu_mac_utilization"].get<double>() * 100.0, h["bottleneck"].get<std::string>().c_str());
    out << line;
  }
  if (report.contains("ps")) {
    const auto& p = report["ps"];
    std::snprintf(line, sizeof(line),
                  "ps           %s, %s: %llu workers, %llu tasks, %llu steps: %.3f ms per step (compute %.3f ms); "
                  "shard busy imbalance %.3f (max / mean)\n",
                  p["policy"].get<std::string>().c_str(), p["aggregation"].get<std::string>().c_str(),
                  static_cast<unsigned long long>(p["workers"].get<uint64_t>()),
                  static_cast<unsigned long long>(p["tasks"].get<uint64_t>()),
                  static_cast<unsigned long long>(p["steps"].get<uint64_t>()), p["mean_step_s"].get<double>() * 1e3,
                  p["step_compute_s"].get<double>() * 1e3, p["imbalance"]["busy"].get<double>());
    out << line;
  }
  return out.str();
}

}  // namespace tpusim
