// DRAM presets: one stack of HBM2, HBM2e or HBM3 in pseudo-channel mode, as a
// DramConfig. dram_presets.cpp gives the source of every number; where the
// standard's exact figure was not at hand the value is marked "typical, assumed".
#pragma once

#include <string>

#include "sim/hbm/dram/dram_config.hpp"

namespace tpusim {

DramConfig hbm2Config();   // 4-Hi 4 GiB stack, 2.0 Gb/s per pin, 256 GB/s
DramConfig hbm2eConfig();  // 4-Hi 8 GiB stack, 3.2 Gb/s per pin, 410 GB/s
DramConfig hbm3Config();   // 8-Hi 16 GiB stack, 6.4 Gb/s per pin, 819 GB/s
// The same at another pin rate (a speed grade): the clock is half the rate, the
// nanosecond timings are converted at that clock, the cycle counts kept.
DramConfig hbm2ConfigAt(double pin_gbps);
DramConfig hbm2eConfigAt(double pin_gbps);
DramConfig hbm3ConfigAt(double pin_gbps);

// "hbm2", "hbm2e" or "hbm3" at pin_gbps (0: the preset's own rate); anything
// else is an invalid-config error.
DramConfig dramPreset(const std::string& name, double pin_gbps = 0);

}  // namespace tpusim
