// The MXU numerics' matmul (sim/common/matmul_numerics.hpp), which the functional run
// and the CPU reference's --numerics mxu compute every matmul and convolution with:
// the GEMMs of a ResNet-50 layer2 3x3 convolution at batch 2 (1568 output rows, 128
// channels, 1152 = 128 x 3 x 3 patch columns) and of its first 7x7 convolution, in
// bf16, and the forward GEMM in f32 at DEFAULT (1 bf16 pass) and HIGHEST (6 passes).
// The argument is the thread count. Run: build/bench/mxu_numerics_bench (quote
// medians and the machine).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "sim/common/matmul_numerics.hpp"

namespace {

using tpusim::DType;
using tpusim::numerics::MatmulNumerics;
using tpusim::numerics::MatmulPrecision;

std::vector<float> randomValues(uint64_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> values(0.0f, 1.0f);
  std::vector<float> out(count);
  for (float& v : out) v = values(rng);
  return out;
}

void gemm(benchmark::State& state, DType dtype, MatmulPrecision precision, uint64_t m, uint64_t k, uint64_t n) {
  MatmulNumerics numerics;
  numerics.lhs_dtype = numerics.rhs_dtype = dtype;
  numerics.precision = precision;
  const std::vector<float> lhs = randomValues(m * k, 1), rhs = randomValues(k * n, 2);
  std::vector<float> out(m * n);
  for (auto _ : state) {
    tpusim::numerics::mxuMatmul(numerics, lhs, rhs, out, m, k, n, static_cast<int>(state.range(0)));
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GMAC/s"] =
      benchmark::Counter(static_cast<double>(m * k * n) * 1e-9 * tpusim::numerics::matmulPasses(numerics),
                         benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

// layer2's 3x3 convolution: y = im2col(x) x w^T, dx columns = dy x w, dw = dy^T x im2col(x);
// conv1: 7x7 over 3 channels, 64 filters, 112 x 112 outputs of 2 images.
#define TPUSIM_GEMM_BENCH(name, dtype, precision, m, k, n)                         \
  BENCHMARK_CAPTURE(gemm, name, DType::dtype, MatmulPrecision::precision, m, k, n) \
      ->Arg(1)                                                                     \
      ->Arg(2)                                                                     \
      ->Unit(benchmark::kMillisecond)                                              \
      ->UseRealTime()
TPUSIM_GEMM_BENCH(layer2_forward_bf16, kBF16, kDefault, 1568, 1152, 128);
TPUSIM_GEMM_BENCH(layer2_grad_input_bf16, kBF16, kDefault, 1568, 128, 1152);
TPUSIM_GEMM_BENCH(layer2_grad_weight_bf16, kBF16, kDefault, 128, 1568, 1152);
TPUSIM_GEMM_BENCH(conv1_forward_bf16, kBF16, kDefault, 25088, 147, 64);
TPUSIM_GEMM_BENCH(layer2_forward_f32_default, kF32, kDefault, 1568, 1152, 128);
TPUSIM_GEMM_BENCH(layer2_forward_f32_highest, kF32, kHighest, 1568, 1152, 128);

BENCHMARK_MAIN();
