// The device the CUDA executor (cuda_executor.hpp) runs a graph on: memory, timing,
// and one call per kind of kernel, each taking a plain description of its operands
// (reference/cuda/kernels). Two implementations: the NVIDIA GPU (gpu_device.cu:
// cuBLAS, cuDNN and the kernels compiled by nvcc) and the host (host_device.hpp: the
// same kernels' bodies run by a loop, so that CI tests the executor and the kernels
// without a GPU). Plain C++17 without CUDA types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "reference/cuda/kernels/losses.hpp"
#include "reference/cuda/kernels/optimizer.hpp"
#include "reference/cuda/kernels/pointwise.hpp"
#include "reference/cuda/kernels/pool.hpp"
#include "reference/cuda/kernels/product_args.hpp"
#include "reference/cuda/kernels/reduce.hpp"

namespace tpusim::reference::cuda {

// What report.json's per_op[].kernel calls the project's own kernels (Device::gemmKernel and the like).
inline constexpr const char* kProjectKernel = "tpusim kernel";
inline constexpr const char* kInt8GemmKernel = "tpusim int8 GEMM kernel";
inline constexpr const char* kInt8ConvKernel = "tpusim int8 convolution kernel";
inline constexpr const char* kPoolKernel = "tpusim pooling kernel";

class Device {
 public:
  virtual ~Device() = default;

  // Device memory, freed with the Device; zeroed.
  virtual void* allocate(size_t bytes) = 0;
  virtual void upload(void* device, const void* host, size_t bytes) = 0;
  // Waits for the work issued so far, then copies.
  virtual void download(void* host, const void* device, size_t bytes) = 0;
  virtual void zero(void* device, size_t bytes) = 0;

  // Around the work issued between the two calls; stopTimer waits for it and returns its seconds.
  virtual void startTimer() = 0;
  virtual double stopTimer() = 0;
  // The most device memory in use at any stopTimer() since the device was made, above what
  // was in use before it: its own buffers and what its libraries allocated.
  virtual uint64_t peakBytes() const = 0;

  // Chooses, once before the timed runs, how the device runs the int8 GEMM `args` (cuBLAS's int8
  // GEMM on the GPU, where it takes it): the id to put in args.plan, or -1 for the project's kernel.
  virtual int planGemm(const GemmArgs& args) = 0;
  virtual void gemm(const GemmArgs& args) = 0;
  // Chooses how the device runs the floating `args` (cuDNN's descriptors, algorithm and workspace),
  // once, before the timed runs: the id to put in args.plan. (An int8 convolution has no plan.)
  virtual int planConv(const ConvArgs& args) = 0;
  virtual void conv(const ConvArgs& args) = 0;
  virtual void pointwise(const PointwiseArgs& args) = 0;
  // How many consecutive terms one thread folds in a float reduction of `terms` terms into each
  // of `outputs` outputs (ReduceArgs::chunk): 0 for all of an output's, the CPU executor's order.
  virtual int64_t reduceChunk(int64_t outputs, int64_t terms) const = 0;
  virtual void reduce(const ReduceArgs& args) = 0;
  virtual void copy(const CopyArgs& args) = 0;
  virtual void gather(const GatherArgs& args) = 0;
  virtual void gatherGrad(const GatherArgs& args) = 0;  // out: float sums, zeroed first
  virtual void softmax(const SoftmaxArgs& args) = 0;
  virtual void crossEntropy(const CrossEntropyArgs& args, bool gradient) = 0;
  virtual void nll(const NllArgs& args) = 0;  // the loss, or (args.gradient) its gradient into a zeroed out
  virtual void mse(const MseArgs& args) = 0;
  virtual void optimizer(const OptimizerArgs& args) = 0;
  // Chooses, once before the timed runs, whether a library runs the forward pooling `args`
  // (cuDNN on the GPU, cudnn_pool.hpp): the id to put in args.plan, or -1 for the project's kernel.
  virtual int planPool(const PoolArgs& args) = 0;
  virtual void pool(const PoolArgs& args) = 0;
  virtual void poolArgmax(const PoolArgs& args) = 0;
  virtual void poolGrad(const PoolArgs& args) = 0;  // dx: float sums

  // What runs a planned call, for report.json's per_op[].kernel: a library's function and its
  // configuration, or the project's kernel ("tpusim ... kernel").
  virtual std::string gemmKernel(const GemmArgs& args) const = 0;
  virtual std::string convKernel(const ConvArgs& args) const = 0;
  virtual std::string poolKernel(const PoolArgs& args) const = 0;
};

// A sum across a group of devices (data parallel's gradient all-reduce): outputs[r] on
// device r becomes the sum of every device's inputs[], all `count` elements of one dtype.
class Collective {
 public:
  virtual ~Collective() = default;
  virtual void allReduceSum(const std::vector<Ref>& inputs, const std::vector<Ref>& outputs, int64_t count) = 0;
  virtual std::string kernel() const = 0;  // what runs the all-reduce, as Device::gemmKernel says
};

struct DeviceGroup {
  std::vector<std::unique_ptr<Device>> devices;
  std::unique_ptr<Collective> collective;  // null for one device
};

// GPUs 0 .. count - 1 of this machine, with an NCCL communicator over them (more than one). Throws Error:
// kNoDevice with fewer GPUs visible, kUnsupported in a build without CUDA (cuda_device_none.cpp).
DeviceGroup makeCudaDevices(int count);

}  // namespace tpusim::reference::cuda
