// The CMEM parameters (configs/hardware.proto, CmemConfig) checked against one
// another and turned into the geometry the model and the compiler use: how many
// lines of line_bytes, in how many sets of `ways`.
#pragma once

#include <cstdint>
#include <string>

#include "configs/hardware.pb.h"

namespace tpusim {

enum class CmemMode { kOff, kCache, kSoftware };

struct CmemGeometry {
  CmemMode mode = CmemMode::kOff;
  uint64_t capacity_bytes = 0;
  uint64_t line_bytes = 0;
  uint64_t lines = 0;  // capacity_bytes / line_bytes
  uint64_t ways = 0;   // cache mode: lines per set
  uint64_t sets = 0;   // cache mode: lines / ways
  double bandwidth_gbps = 0;
  double hit_latency_ns = 0;
};

const char* cmemModeName(CmemMode mode);

// Throws Error (kInvalidConfig) with one line naming the parameter when CMEM is on
// (cache or software) and: its capacity is 0, the capacity is not a whole number of
// lines, or (cache mode) the associativity does not divide the lines. With mode off
// nothing else is read, so a chip without CMEM may leave the rest at any value.
CmemGeometry cmemGeometryOf(const config::HardwareConfig& hw);

}  // namespace tpusim
