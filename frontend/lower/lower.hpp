// Lowering: an IR graph becomes a one-chip Program for a given preset.
//
// Each op is split across the chip's TensorCores along its leading output
// dimension, then tiled to fit VMEM (tiling.hpp). A matmul whose rhs has no
// batch dimensions folds the lhs batch into M and splits rows over the cores;
// a batched one splits its batch over the cores. On a core each GEMM tile is
// spread over the MXUs by columns or by rows, whichever the MXU's closed form
// says finishes sooner. Reshapes are views and emit nothing. Per core and op:
// DMA loads of the tiles into VMEM (engine 0), the compute, DMA stores of the
// results (last engine).
// Dependencies follow the HBM buffers: read-after-write, write-after-read and
// write-after-write, so units overlap exactly as far as the data allows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "frontend/ir/graph.hpp"
#include "frontend/passes/memory_plan.hpp"
#include "sim/common/params.hpp"
#include "sim/interconnect/topology.hpp"
#include "traces/program.pb.h"

namespace tpusim {

struct LowerOptions {
  std::string model;  // shown in reports
  std::string mode;   // "training" or "inference"
  uint64_t batch = 0;
  // f32 matmuls and convolutions on the MXU as 1, 3 or 6 bf16 passes, as XLA's
  // precision config DEFAULT, HIGH and HIGHEST (docs/mxu.md).
  std::string matmul_precision = "default";
  // GEMM tiles: "cycles" (the fewest estimated cycles, then bytes) or "bytes" (the fewest HBM bytes).
  std::string tiling_objective = "cycles";
  // Data parallel over the chips of this ICI slice (none or one chip: a one-chip Program).
  // Collectives run over all of them (frontend/lower/lower_collective.cpp).
  std::optional<Topology> topology = std::nullopt;
  // Consecutive gradient all-reduces share one collective until it holds this many bytes
  // (0: one collective per gradient).
  uint64_t all_reduce_bucket_bytes = 0;
  // Tensor parallel: the slice's chips in groups of this many consecutive ones, each
  // group holding one split copy of the model (frontend/passes/tensor_parallel.hpp);
  // the data-parallel replicas are the groups. Must divide the slice's chip count.
  int64_t tensor_parallel = 1;
};

// 1, 3 or 6 for "default", "high", "highest"; anything else is an invalid-config error.
uint64_t matmulPassesOf(const std::string& precision);

// Throws Error (kResource) when the tensors do not fit HBM (naming the
// largest) or one op's working set does not fit VMEM (naming the op).
program::Program lowerToProgram(const ir::Graph& graph, const HardwareParams& hw, const LowerOptions& options);
// With the graph's memory plan already made (frontend/compile.hpp times it apart).
program::Program lowerToProgram(const ir::Graph& graph, const MemoryPlan& plan, const HardwareParams& hw,
                                const LowerOptions& options);

}  // namespace tpusim
