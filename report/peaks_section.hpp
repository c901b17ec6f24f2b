// report.json's "peaks" part (docs/report-schema.md, "peaks"): the chip's compute and HBM
// bandwidth ceilings from the preset, the roofs of the roofline in report.html, so a
// saved report.json is enough to draw it.
#pragma once

#include <nlohmann/json.hpp>

#include "sim/common/params.hpp"

namespace tpusim {

nlohmann::ordered_json peaksSection(const HardwareParams& hw);

}  // namespace tpusim
