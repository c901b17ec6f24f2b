// The CUDA reference executor: runs an IR training (or inference) graph on an
// NVIDIA GPU, op by op in graph order, and times each op with CUDA events, as
// the CPU executor does with the wall clock (reference/op_timing.hpp). MatMul
// goes to cuBLAS SGEMM; the elementwise, loss and SGD ops to the project's own
// kernels (cuda_kernels.cu). It runs f32 tensors (int64 labels) and the op types
// listed in docs/reference.md; anything else is an unsupported error that names
// the op. Built from cuda_executor.cpp where CMake finds nvcc, else from
// cuda_executor_none.cpp, which says so.
#pragma once

#include <map>
#include <string>

#include "frontend/ir/graph.hpp"
#include "frontend/ir/tensor_value.hpp"
#include "reference/op_timing.hpp"

namespace tpusim::reference {

class CudaExecutor {
 public:
  // Checks every op and tensor of `graph` against what the executor runs, without
  // touching a device: throws Error (kUnsupported) naming the first it does not.
  explicit CudaExecutor(const ir::Graph& graph);

  // Runs on device 0: `timing.warmup` untimed runs, then `timing.repeats` timed
  // ones; each op's time is its median over them. `feeds` as CpuExecutor::run.
  // The values are those of the last run, copied back. Throws Error: kInvalidInput
  // for a missing or mismatched feed or a label out of range, kResource when device
  // memory runs out, kNoDevice without a device.
  TimedRun runTimed(const std::map<std::string, ir::TensorValue>& feeds, const TimingOptions& timing) const;

 private:
  const ir::Graph& m_graph;
};

}  // namespace tpusim::reference
