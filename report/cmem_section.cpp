#include "report/cmem_section.hpp"

#include <cstdio>

#include "sim/hbm/cmem_config.hpp"

namespace tpusim {

namespace {

bool isParameter(const program::Buffer& buffer) {
  return buffer.space() == program::HBM &&
         (buffer.role() == program::WEIGHT || buffer.role() == program::OPTIMIZER_STATE);
}

// DMA loads whose HBM side is a parameter (weights, constants, optimizer state): how many,
// their bytes, and the DMA engines' busy cycles on them.
nlohmann::ordered_json parameterLoads(const program::ChipProgram& chip, const SimResult& result) {
  uint64_t transfers = 0, bytes = 0, cycles = 0;
  for (const TimelineEvent& event : result.timeline.events()) {
    const program::Instruction& ins = chip.instructions(static_cast<int>(event.instruction));
    if (!ins.has_dma() || ins.dma().src() != program::HBM) continue;
    bool parameter = false;
    for (uint32_t id : ins.reads()) parameter = parameter || isParameter(chip.buffers(static_cast<int>(id)));
    if (!parameter) continue;
    ++transfers;
    bytes += ins.dma().bytes();
    cycles += event.end_cycle - event.start_cycle;
  }
  nlohmann::ordered_json entry;
  entry["transfers"] = transfers;
  entry["bytes"] = bytes;
  entry["dma_cycles"] = cycles;
  return entry;
}

}  // namespace

nlohmann::ordered_json cmemSection(const program::ChipProgram& chip, const SimResult& result,
                                   const HardwareParams& hw) {
  const CmemGeometry geometry = cmemGeometryOf(hw.config());
  const bool on = geometry.mode != CmemMode::kOff;
  const auto stat = [&](const char* field) -> nlohmann::ordered_json {
    if (!on) return 0;
    const StatEntry& entry = result.stats->at(std::string("chip0.cmem.") + field);
    if (entry.is_formula) return entry.value();
    return entry.counter->value();
  };
  nlohmann::ordered_json entry;
  entry["mode"] = cmemModeName(geometry.mode);
  const config::CmemConfig& config = hw.config().cmem();
  entry["capacity_bytes"] = static_cast<uint64_t>(config.capacity_mib() * 1024.0 * 1024.0);
  entry["line_bytes"] = config.line_bytes();
  entry["ways"] = geometry.ways;  // cache mode only
  uint64_t resident = 0, resident_bytes = 0;
  for (const program::Buffer& buffer : chip.buffers()) {
    if (!buffer.cmem_resident()) continue;
    ++resident;
    resident_bytes += buffer.bytes();
  }
  const bool software = geometry.mode == CmemMode::kSoftware;
  entry["resident_buffers"] = software ? resident : 0;
  entry["resident_bytes"] = software ? resident_bytes : 0;
  for (const char* field : {"hits", "misses", "hit_rate", "bytes_from_cmem", "bytes_to_cmem", "bytes_from_hbm",
                            "bytes_to_hbm", "bytes_written_back", "dirty_bytes", "busy_cycles"}) {
    entry[field] = stat(field);
  }
  if (!on) entry["hit_rate"] = 0.0;
  entry["parameter_loads"] = parameterLoads(chip, result);
  return entry;
}

void appendCmemSummary(const nlohmann::ordered_json& report, std::ostringstream& out) {
  if (!report.contains("cmem") || report["cmem"]["mode"] == "off") return;
  const auto& cmem = report["cmem"];
  const double mib = 1024.0 * 1024.0;
  char line[256];
  std::snprintf(
      line, sizeof(line),
      "CMEM         %s, %.0f MiB: hit rate %.1f%%, %.3f MiB served, %.3f MiB read from HBM; parameter "
      "loads %llu DMA cycles\n",
      cmem["mode"].get<std::string>().c_str(), static_cast<double>(cmem["capacity_bytes"].get<uint64_t>()) / mib,
      100.0 * cmem["hit_rate"].get<double>(), static_cast<double>(cmem["bytes_from_cmem"].get<uint64_t>()) / mib,
      static_cast<double>(cmem["bytes_from_hbm"].get<uint64_t>()) / mib,
      static_cast<unsigned long long>(cmem["parameter_loads"]["dma_cycles"].get<uint64_t>()));
  out << line;
}

}  // namespace tpusim
