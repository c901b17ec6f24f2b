// The CUDA executor's device emulated on the host: its own kernels' bodies (the
// functors of reference/cuda/kernels, which nvcc compiles into the GPU's kernels)
// run by a loop, one call per element, and GEMMs and convolutions by the CPU
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
  HostDevice() = default;
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
  void gemm(const GemmArgs& args) override;
  int planConv(const ConvArgs&) override { return 0; }
  void conv(const ConvArgs& args) override;
  int planPool(const PoolArgs&) override { return -1; }  // the project's kernel, as the CPU pools

  template <typename Functor>
  void run(int64_t count, const Functor& functor) {
    for (int64_t i = 0; i < count; ++i) functor(i);
  }

 private:
  std::vector<void*> m_buffers;
  uint64_t m_allocated = 0;
  std::chrono::steady_clock::time_point m_start;
};

// The all-reduce of a group of host devices: each element summed in float over the
// devices in their order, then stored (rounded) to every output.
class HostCollective : public Collective {
 public:
  void allReduceSum(const std::vector<Ref>& inputs, const std::vector<Ref>& outputs, int64_t count) override;
};

}  // namespace tpusim::reference::cuda
