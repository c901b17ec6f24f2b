// report.json's "cmem" part (docs/report-schema.md, "cmem"): CMEM's mode and geometry,
// its hits, misses and bytes, and what loading parameters cost the DMA engines,
// so runs with CMEM off, in cache mode and in software mode compare directly.
#pragma once

#include <sstream>

#include <nlohmann/json.hpp>

#include "sim/chip/driver.hpp"
#include "sim/common/params.hpp"
#include "traces/program.pb.h"

namespace tpusim {

nlohmann::ordered_json cmemSection(const program::ChipProgram& chip, const SimResult& result, const HardwareParams& hw);

// The summary's CMEM line, when CMEM is on.
void appendCmemSummary(const nlohmann::ordered_json& report, std::ostringstream& out);

}  // namespace tpusim
