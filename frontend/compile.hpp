// The compiler pipeline: the Graph -> Graph passes (frontend/passes), memory
// planning, lowering to a Program, then CMEM placement on the Program, each timed.
//
//   constant_fold     transposes into matmul flags, identities, chains (passes/constant_fold.hpp)
//   dead_code         drop ops nothing reads
//   tensor_parallel   split matmul pairs over the chips of a group (passes/tensor_parallel.hpp)
//   data_parallel     all-reduce each weight gradient across the replicas (passes/data_parallel.hpp)
//   fuse_elementwise  elementwise chains behind their producer (passes/fusion.hpp)
//   placement         the unit of each op (passes/placement.hpp)
//   mxu_padding       GEMM shapes padded to the MXU tile (passes/mxu_padding.hpp)
//   memory_plan       HBM offsets with reuse (passes/memory_plan.hpp)
//   lower             the Program (lower/lower.hpp)
//   cmem_placement    buffers pinned in software-managed CMEM (passes/cmem_placement.hpp)
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "frontend/ir/graph.hpp"
#include "frontend/lower/lower.hpp"
#include "frontend/passes/pass_manager.hpp"
#include "sim/common/params.hpp"

namespace tpusim {

struct CompileOptions {
  std::vector<std::string> print_ir_after;  // pass names, or "all"
  std::ostream* ir_out = nullptr;
};

struct Compiled {
  program::Program program;
  std::vector<PassTiming> timings;  // every pass, then memory_plan and lower
};

// The pass names, in order (for help texts and errors).
std::vector<std::string> compilerPassNames();

Compiled compileGraph(const ir::Graph& graph, const HardwareParams& hw, const LowerOptions& options,
                      const CompileOptions& compile = {});

}  // namespace tpusim
