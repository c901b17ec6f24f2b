// report.json's "interconnect" section (runs on an ICI slice) and links.csv, one row
// per directed link for a heatmap. docs/report-schema.md documents the fields.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "sim/chip/driver.hpp"
#include "traces/program.pb.h"

namespace tpusim {

// The slice, the network totals, every collective chip 0 ran and every directed link.
// Requires result.ici.
nlohmann::ordered_json interconnectEntry(const program::Program& program, const SimResult& result);

// The parallelism degrees of a run on a slice: {"dp", "tp", "pp"} (dp x tp x pp = chips).
nlohmann::ordered_json parallelismEntry(const program::Program& program);

// Cycles in which chip 0 has a collective in flight and none of its MXUs, VPUs or DMA
// engines is busy: the communication the step does not hide behind compute.
uint64_t exposedCommunicationCycles(const program::Program& program, const Timeline& timeline);

// report["interconnect"]["links"] as links.csv: src,dst,dim,dir,x,y,z,bytes,busy_cycles,utilization,stalled_cycles
// (x, y, z: the source chip's coordinates). A missing field throws nlohmann's exception.
std::string linksCsv(const nlohmann::ordered_json& report);

}  // namespace tpusim
