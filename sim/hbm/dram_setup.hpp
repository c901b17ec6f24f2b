// The DRAM behind the chip's HBM, from the hbm.* parameters: hbm.dram_preset
// at hbm.pin_gbps, hbm.stacks stacks, and as many rows per bank as hold
// hbm.capacity_gib (the presets' stacks hold less than some chips have).
#pragma once

#include "configs/hardware.pb.h"
#include "sim/hbm/dram/dram_config.hpp"

namespace tpusim {

// Throws Error (kInvalidConfig) with one line when the DRAM's peak differs
// from hbm.bandwidth_gbps by more than 0.1%, naming what to set.
DramConfig hbmDramConfig(const config::HbmConfig& hbm);

}  // namespace tpusim
