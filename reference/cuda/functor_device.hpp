// The kernel calls every device makes the same way: each builds its kernel's functor
// (reference/cuda/kernels) and hands it to the device's launch(count, functor), which
// runs functor(i) for i in [0, count): a CUDA grid on the GPU, a loop on the host.
#pragma once

#include "reference/cuda/device.hpp"
#include "reference/cuda/kernels/int8_products.hpp"

namespace tpusim::reference::cuda {

template <typename Launcher>
class FunctorDevice : public Device {
 public:
  void pointwise(const PointwiseArgs& args) override { launch(args.count, PointwiseKernel{args}); }
  void reduce(const ReduceArgs& args) override {
    if (args.chunk > 0) {
      launch(args.out_count * reduceChunks(args), ReducePartialKernel{args});
      launch(args.out_count, ReduceCombineKernel{args});
    } else {
      launch(args.out_count, ReduceKernel{args});
    }
  }
  void copy(const CopyArgs& args) override { launch(args.count, CopyKernel{args}); }
  void gather(const GatherArgs& args) override {
    launch(args.outer * args.indices_count * args.inner, GatherKernel{args});
  }
  void gatherGrad(const GatherArgs& args) override { launch(args.outer * args.inner, GatherGradKernel{args}); }
  void softmax(const SoftmaxArgs& args) override { launch(args.outer * args.inner, SoftmaxKernel{args}); }
  void crossEntropy(const CrossEntropyArgs& args, bool gradient) override {
    if (gradient) {
      launch(args.rows, CrossEntropyGradKernel{args});
    } else {
      launch(args.rows, CrossEntropyTermKernel{args});
      launch(1, CrossEntropyTotalKernel{args});
    }
  }
  void nll(const NllArgs& args) override {
    launch(args.n * args.d, NllTermKernel{args});
    launch(1, NllTotalKernel{args});
    if (args.gradient) launch(args.n * args.d, NllGradKernel{args});
  }
  void mse(const MseArgs& args) override { launch(1, MseKernel{args}); }
  void optimizer(const OptimizerArgs& args) override {
    launch(args.target == Target::kStep ? 1 : args.count, OptimizerKernel{args});
  }
  void pool(const PoolArgs& args) override { launch(outputs(args), PoolKernel{args}); }
  void poolArgmax(const PoolArgs& args) override { launch(outputs(args), PoolArgmaxKernel{args}); }
  void poolGrad(const PoolArgs& args) override { launch(inputs(args), PoolGradKernel{args}); }

 protected:
  // The project's int8 products, which both devices run (cuBLAS's int8 GEMM on the GPU aside).
  void int8Gemm(const GemmArgs& args) { launch(args.batch * args.m * args.n, Int8GemmKernel{args}); }
  void int8Conv(const ConvArgs& args) {
    launch(args.y_dims[0] * args.y_dims[1] * args.y_dims[2] * args.y_dims[3], Int8ConvKernel{args});
  }

 private:
  template <typename Functor>
  void launch(int64_t count, const Functor& functor) {
    static_cast<Launcher*>(this)->run(count, functor);
  }
  static int64_t outputs(const PoolArgs& args) { return args.planes * planeSize(args.y_spatial, args.rank); }
  static int64_t inputs(const PoolArgs& args) { return args.planes * planeSize(args.x_spatial, args.rank); }
};

}  // namespace tpusim::reference::cuda
