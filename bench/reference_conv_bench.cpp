// The CPU reference executor's convolution passes (reference/cpu/conv.hpp) by thread count:
// a ResNet-50 layer2 3x3 convolution (batch 2, 128 channels, 28 x 28) forward, and both
// gradients. Each pass splits whole output elements over the threads, so the speed-up is
// bounded by the parts (images x channels) and the machine's cores.
// Run: build/bench/reference_conv_bench (quote medians and the machine).
#include <benchmark/benchmark.h>

#include <random>

#include "reference/cpu/conv.hpp"

namespace {

using tpusim::reference::ConvShapes;

const ConvShapes kShapes{{2, 128, 28, 28}, {128, 128, 3, 3}, {2, 128, 28, 28}};

std::vector<double> randomValues(const tpusim::ir::Shape& shape) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::vector<double> values(static_cast<size_t>(tpusim::ir::elementCount(shape)));
  for (double& v : values) v = static_cast<float>(uniform(rng));
  return values;
}

tpusim::ir::ConvGeometry same() {
  tpusim::ir::ConvGeometry geometry;
  geometry.pads = {1, 1, 1, 1};
  return geometry;
}

enum class Pass { kForward, kGradInput, kGradWeight };

void conv(benchmark::State& state, Pass pass) {
  const int threads = static_cast<int>(state.range(0));
  const std::vector<double> x = randomValues(kShapes.x), w = randomValues(kShapes.w), y = randomValues(kShapes.y);
  std::vector<double> out(pass == Pass::kGradWeight ? w.size() : pass == Pass::kGradInput ? x.size() : y.size());
  for (auto _ : state) {
    switch (pass) {
      case Pass::kForward: tpusim::reference::convForward<float>(x, w, out, kShapes, same(), threads); break;
      case Pass::kGradInput: tpusim::reference::convGradInput<float>(y, w, out, kShapes, same(), threads); break;
      case Pass::kGradWeight: tpusim::reference::convGradWeight<float>(x, y, out, kShapes, same(), threads); break;
    }
    benchmark::DoNotOptimize(out.data());
  }
  const double macs = 2.0 * 128 * 28 * 28 * 128 * 9;
  state.counters["GMAC/s"] = benchmark::Counter(macs * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK_CAPTURE(conv, forward, Pass::kForward)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(conv, grad_input, Pass::kGradInput)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(conv, grad_weight, Pass::kGradWeight)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
