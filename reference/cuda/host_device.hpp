// The CUDA executor's device emulated on the host: its own kernels' bodies (the
// functors of reference/cuda/kernels, which nvcc compiles into the GPU's kernels)
// run by a loop, one call per element, and floating GEMMs and convolutions by the CPU
// executor's loops in place of cuBLAS and cuDNN. Tests run the CUDA executor on it in
// CI, where no GPU is: its graph walk, its buffers and every kernel of its own are
// checked against the CPU executor; what only a GPU shows (launches, cuBLAS, cuDNN,
// timing) is checked by scripts/gpu-check.sh.
#pragma once

#include <chrono>
#include <vector>

#include "reference/cuda/functor_device.hpp"

namespace tpusim::reference::cuda {

class HostDevice : public FunctorDevice<HostDevice> {
 public:
  // reduce_chunk > 0: float reductions of more terms than that fold them in chunks of it, as the
  // GPU device does (so tests can check that path here); 0: the CPU executor's order.
  explicit HostDevice(int64_t reduce_chunk = 0) : m_reduce_chunk(reduce_chunk) {}
  ~HostDevice() override;
  HostDevice(const HostDevice&) = delete;
  HostDevice& operator=(const HostDevice&) = delete;

  void* allocate(size_t bytes) override;
  void upload(void* device, const void* host, size_t bytes) override;
  void download(void* host, const void* device, size_t bytes) override;
  void zero(void* device, size_t bytes) override;
  void startTimer() override;
  double stopTimer() override;
  uint64_t peakBytes() const override { return m_allocated; }  // nothing is freed before the end
  int planGemm(const GemmArgs&) override { return -1; }        // the project's int8 kernel
  void gemm(const GemmArgs& args) override;
  int planConv(const ConvArgs&) override { return 0; }
  void conv(const ConvArgs& args) override;
  int planPool(const PoolArgs&) override { return -1; }  // the project's kernel, as the CPU pools
  std::string gemmKernel(const GemmArgs& args) const override;
  std::string convKernel(const ConvArgs& args) const override;
  std::string poolKernel(const PoolArgs&) const override { return kPoolKernel; }
  int64_t reduceChunk(int64_t, int64_t terms) const override { return terms > m_reduce_chunk ? m_reduce_chunk : 0; }

  template <typename Functor>
  void run(int64_t count, const Functor& functor) {
    for (int64_t i = 0; i < count; ++i) functor(i);
  }

 private:
  int64_t m_reduce_chunk = 0;
  std::vector<void*> m_buffers;
  uint64_t m_allocated = 0;
  std::chrono::steady_clock::time_point m_start;
};

// The all-reduce of a group of host devices: each element summed in float over the
// devices in their order, then stored (rounded) to every output.
class HostCollective : public Collective {
 public:
  void allReduceSum(const std::vector<Ref>& inputs, const std::vector<Ref>& outputs, int64_t count) override;
  std::string kernel() const override { return "host: float sums in replica order (in place of NCCL)"; }
};

}  // namespace tpusim::reference::cuda
