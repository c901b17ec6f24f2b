// The CPU reference executor's f32 matmul (reference/cpu/kernels.hpp) on ViT-B/16's shapes at
// batch 1 (197 tokens): the attention's input projection [197, 768] x [768, 2304] and the MLP's
// second layer [197, 3072] x [3072, 768], by thread count.
// Run: build/bench/reference_matmul_bench (quote medians and the machine).
#include <benchmark/benchmark.h>

#include <random>

#include "reference/cpu/kernels.hpp"

namespace {

std::vector<double> randomValues(int64_t count) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::vector<double> values(static_cast<size_t>(count));
  for (double& v : values) v = static_cast<float>(uniform(rng));
  return values;
}

void matmul(benchmark::State& state, int64_t m, int64_t k, int64_t n) {
  const int threads = static_cast<int>(state.range(0));
  const std::vector<double> a = randomValues(m * k), b = randomValues(k * n);
  std::vector<double> out(static_cast<size_t>(m * n));
  for (auto _ : state) {
    tpusim::reference::matmul<float>(a, b, out, m, k, n, false, false, threads);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GMAC/s"] =
      benchmark::Counter(static_cast<double>(m * k * n) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK_CAPTURE(matmul, vit_in_projection, 197, 768, 2304)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(matmul, vit_mlp_out, 197, 3072, 768)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
