// CMEM placement, for software-managed CMEM (cmem.mode software; docs/memory.md,
// "CMEM"): a Program -> Program step after lowering that pins HBM buffers in CMEM
// by setting Buffer.cmem_resident; the simulated CMEM then serves every transfer
// of a pinned buffer, and HBM none.
//
// Candidates are the buffers that live in HBM for the whole step and across steps:
// weights, constants and optimizer state (their bytes are never shared with
// another tensor in the memory plan). Each is ranked by its reuse, the bytes the
// step's DMAs move to and from it per byte of the buffer (a weight read by the
// forward and backward passes and read and written by its update scores about 4),
// then by size (larger first) and id. Buffers are taken in that order while they
// fit the capacity left; one that does not fit is skipped for smaller ones after
// it. A buffer no DMA touches is never pinned. Any other mode leaves the Program
// unchanged. Deterministic.
#pragma once

#include <cstdint>
#include <string>

#include "configs/hardware.pb.h"
#include "traces/program.pb.h"

namespace tpusim {

struct CmemPlacement {
  uint64_t pinned_buffers = 0;
  uint64_t pinned_bytes = 0;
  uint64_t capacity_bytes = 0;
  uint64_t candidate_bytes = 0;  // the candidates' bytes, pinned or not
};

CmemPlacement placeInCmem(program::ChipProgram& chip, const config::HardwareConfig& hw);

// The placement as text: totals, then each pinned buffer with its bytes and reuse.
std::string describeCmemPlacement(const program::ChipProgram& chip);

}  // namespace tpusim
