// A transaction's bytes as DRAM bursts: row by row (a contiguous transfer is
// one row), the bursts that cover each row, in address order. A burst shared
// by the end of one row and the start of the next is visited once, as a DMA
// engine coalesces it; rows that overlap further (a stride below the burst)
// visit their bursts again.
#pragma once

#include <cstdint>

#include "sim/hbm/hbm_access.hpp"

namespace tpusim {

template <typename Visit>
void forEachBurst(const HbmAccess& access, uint64_t burst_bytes, Visit&& visit) {
  if (access.row_bytes == 0) return;
  uint64_t previous = UINT64_MAX;
  for (uint64_t row = 0; row < access.rows; ++row) {
    const uint64_t begin = access.address + row * access.row_stride;
    const uint64_t last = (begin + access.row_bytes - 1) / burst_bytes;
    for (uint64_t burst = begin / burst_bytes; burst <= last; ++burst) {
      if (burst != previous) visit(burst * burst_bytes);
      previous = burst;
    }
  }
}

}  // namespace tpusim
