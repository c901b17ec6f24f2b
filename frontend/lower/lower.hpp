// Lowering: an IR graph becomes a one-chip Program for a given preset.
//
// This first compiler keeps every tensor in HBM between ops (no fusion, no
// VMEM residency yet). Each op is split across the chip's TensorCores along
// its leading output dimension. A matmul whose rhs has no batch dimensions
// folds the lhs batch into M and splits rows over the cores; a batched one
// splits its batch over the cores. On a core a matmul is split along N
// across the MXUs. Reshapes are views and emit nothing. Per core and op: DMA loads of the inputs
// into VMEM (engine 0), the compute, a DMA store of the result (last engine).
// Dependencies follow the HBM buffers: read-after-write, write-after-read and
// write-after-write, so units overlap exactly as far as the data allows.
#pragma once

#include <cstdint>
#include <string>

#include "frontend/ir/graph.hpp"
#include "frontend/passes/memory_plan.hpp"
#include "sim/common/params.hpp"
#include "traces/program.pb.h"

namespace tpusim {

struct LowerOptions {
  std::string model;  // shown in reports
  std::string mode;   // "training" or "inference"
  uint64_t batch = 0;
};

// Throws Error (kResource) when the tensors do not fit HBM (naming the
// largest) or one op's working set does not fit VMEM (naming the op).
program::Program lowerToProgram(const ir::Graph& graph, const HardwareParams& hw, const LowerOptions& options);
// With the graph's memory plan already made (frontend/compile.hpp times it apart).
program::Program lowerToProgram(const ir::Graph& graph, const MemoryPlan& plan, const HardwareParams& hw,
                                const LowerOptions& options);

}  // namespace tpusim
