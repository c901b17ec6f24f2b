// The CUDA reference executor: runs an IR training (or inference) graph on an NVIDIA
// GPU, op by op in graph order on one stream, every tensor in device memory for the
// whole step, and times each op with CUDA events, as the CPU executor does with the
// wall clock (reference/op_timing.hpp). MatMul goes to cuBLAS (f32 without TF32; bf16
// and f16 on the tensor cores), convolutions and the forward poolings it states to
// cuDNN, everything else to the project's own kernels (reference/cuda/kernels), in the
// CPU executor's order (a long float reduction in chunks, on the GPU). What
// it runs is in docs/reference.md; anything else is an unsupported error naming the op.
#pragma once

#include <map>
#include <optional>
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
  // `replicas` > 1: `graph` is one replica of a data-parallel step, whose AllReduce ops
  // (frontend/passes/data_parallel.hpp) sum over that many devices.
  // `keep`, where given: the tensors (ids) whose values a run copies back; the others stay on
  // the device and come back empty (a ResNet-50 step's every tensor is gigabytes of host
  // memory). Not given: every tensor is copied back.
  explicit CudaExecutor(const ir::Graph& graph, int64_t replicas = 1,
                        const std::optional<std::vector<int>>& keep = std::nullopt);

  // Runs one replica on GPU 0: `timing.warmup` untimed runs, then `timing.repeats`
  // timed ones; each op's time is its median over them. `feeds` as CpuExecutor::run.
  // The values are those of the last run, copied back (those kept). Throws Error: kInvalidInput for
  // a missing or mismatched feed or a label or index out of range, kResource when
  // device memory runs out, kNoDevice without a device.
  TimedRun runTimed(const std::map<std::string, ir::TensorValue>& feeds, const TimingOptions& timing) const;
  // The same on any device (the host device of host_device.hpp, in tests).
  TimedRun runTimedOn(cuda::Device& device, const std::map<std::string, ir::TensorValue>& feeds,
                      const TimingOptions& timing) const;

  // All the replicas, replica r on GPU r with feeds[r], in lockstep: each op is issued on
  // every device before any is waited for, and an AllReduce sums across them with NCCL.
  // One TimedRun per replica (its values and its devices' op times).
  std::vector<TimedRun> runReplicas(const std::vector<std::map<std::string, ir::TensorValue>>& feeds,
                                    const TimingOptions& timing) const;
  // The same on any group of devices (host devices and their collective, in tests).
  std::vector<TimedRun> runReplicasOn(cuda::DeviceGroup& group,
                                      const std::vector<std::map<std::string, ir::TensorValue>>& feeds,
                                      const TimingOptions& timing) const;

 private:
  // The fed tensors' values by tensor id, checked (shapes, dtypes, labels and indices).
  std::vector<ir::TensorValue> bound(const std::map<std::string, ir::TensorValue>& feeds) const;
  std::vector<TimedRun> runBound(const std::vector<cuda::Device*>& devices, cuda::Collective* collective,
                                 const std::vector<std::vector<ir::TensorValue>>& fed,
                                 const TimingOptions& timing) const;

  const ir::Graph& m_graph;
  int64_t m_replicas;
  std::vector<bool> m_copied_back;  // by tensor id
};

}  // namespace tpusim::reference
