// The CUDA reference executor: runs an IR training (or inference) graph on an NVIDIA
// GPU, op by op in graph order on one stream, every tensor in device memory for the
// whole step, and times each op with CUDA events, as the CPU executor does with the
// wall clock (reference/op_timing.hpp). MatMul goes to cuBLAS (f32 without TF32; bf16
// and f16 on the tensor cores), convolutions to cuDNN, everything else to the
// project's own kernels (reference/cuda/kernels), in the CPU executor's order. What
// it runs is in docs/reference.md; anything else is an unsupported error naming the op.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "frontend/ir/graph.hpp"
#include "frontend/ir/tensor_value.hpp"
#include "reference/cuda/device.hpp"
#include "reference/op_timing.hpp"

namespace tpusim::reference {

class CudaExecutor {
 public:
  // Checks every op and tensor of `graph` against what the executor runs, without
  // touching a device: throws Error (kUnsupported) naming the first it does not.
  explicit CudaExecutor(const ir::Graph& graph);

  // Runs on GPU 0 (cuda::makeCudaDevice): `timing.warmup` untimed runs, then
  // `timing.repeats` timed ones; each op's time is its median over them. `feeds` as
  // CpuExecutor::run. The values are those of the last run, copied back. Throws Error:
  // kInvalidInput for a missing or mismatched feed or a label or index out of range,
  // kResource when device memory runs out, kNoDevice without a device.
  TimedRun runTimed(const std::map<std::string, ir::TensorValue>& feeds, const TimingOptions& timing) const;

  // The same on any device (the host device of host_device.hpp, in tests).
  TimedRun runTimedOn(cuda::Device& device, const std::map<std::string, ir::TensorValue>& feeds,
                      const TimingOptions& timing) const;

 private:
  // The fed tensors' values by tensor id, checked (shapes, dtypes, labels and indices).
  std::vector<ir::TensorValue> bound(const std::map<std::string, ir::TensorValue>& feeds) const;
  TimedRun runBound(cuda::Device& device, const std::vector<ir::TensorValue>& fed, const TimingOptions& timing) const;

  const ir::Graph& m_graph;
};

}  // namespace tpusim::reference
