// The CPU reference executor's elementwise walks on ResNet-50 layer1 shapes (batch 2, 256
// channels, 56 x 56: 1.6 M elements): a residual add of equal shapes, a per-channel operand
// broadcast over the image, the per-channel sum of a gradient (reference/cpu/broadcast.hpp),
// and the rounding of an op's output to its dtype (numerics::roundInPlace).
// Run: build/bench/reference_elementwise_bench (quote medians and the machine).
#include <benchmark/benchmark.h>

#include <random>

#include "reference/cpu/broadcast.hpp"
#include "sim/common/numerics.hpp"

namespace {

using tpusim::ir::Shape;

const Shape kImage{2, 256, 56, 56};
const Shape kChannel{1, 256, 1, 1};

std::vector<double> randomValues(const Shape& shape) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::vector<double> values(static_cast<size_t>(tpusim::ir::elementCount(shape)));
  for (double& v : values) v = static_cast<float>(uniform(rng));
  return values;
}

// a + b in float, as the executor's Add of f32 tensors computes it.
void add(benchmark::State& state, const Shape& b_shape) {
  const std::vector<double> a = randomValues(kImage), b = randomValues(b_shape);
  std::vector<double> out(a.size());
  for (auto _ : state) {
    tpusim::reference::broadcastBinary<double>(a, kImage, b, b_shape, out, kImage, [](double x, double y) {
      return static_cast<float>(x) + static_cast<float>(y);
    });
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(out.size()));
}

void sumPerChannel(benchmark::State& state) {
  const std::vector<double> x = randomValues(kImage);
  std::vector<double> out(256);
  for (auto _ : state) {
    tpusim::reference::reduceSumTo<float>(x, kImage, out, kChannel);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(x.size()));
}

void round(benchmark::State& state, tpusim::DType dtype) {
  const std::vector<double> x = randomValues(kImage);
  std::vector<double> out(x.size());
  for (auto _ : state) {
    out = x;
    tpusim::numerics::roundInPlace(dtype, std::span<double>(out));
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(x.size()));
}

}  // namespace

BENCHMARK_CAPTURE(add, equal_shapes, kImage)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(add, per_channel, kChannel)->Unit(benchmark::kMillisecond);
BENCHMARK(sumPerChannel)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(round, f32, tpusim::DType::kF32)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(round, bf16, tpusim::DType::kBF16)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
