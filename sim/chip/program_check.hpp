// Checks a Program before simulation, so that a bad file or a Program built
// for other hardware is a clear error, not a crash inside the kernel.
#pragma once

#include "configs/hardware.pb.h"
#include "traces/program.pb.h"
#include "traces/program_format.hpp"

namespace tpusim {

// Bytes of one element of `dtype`; 0 for DTYPE_UNSPECIFIED.
uint32_t programDTypeBytes(program::DType dtype);

// Throws Error naming the first problem: wrong format or version, ids out of
// order, a dependency that is not on an earlier instruction (this also rules
// out cycles), a unit, core or buffer that does not exist, an empty matmul, a
// DMA descriptor that runs past its HBM buffer or past HBM.
void validateProgram(const program::Program& program, const config::HardwareConfig& hw);

// Under mxu.timing = pe_by_pe, the PE-cycles the run would step (each MXU instruction's
// closed-form cycles x rows x cols, which the PE-by-PE mode reproduces); an Error
// (kResource) naming mxu.pe_by_pe_max_pe_cycles when they are above it. Nothing otherwise.
void checkPeByPeWork(const program::Program& program, const config::HardwareConfig& hw);

}  // namespace tpusim
