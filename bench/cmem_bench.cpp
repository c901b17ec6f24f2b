// Speed of CMEM's cache-mode lookups (sim/hbm/cmem_tags): lookups per wall
// second on tpuv4's geometry (128 MiB of 4 KiB lines, 16 ways: 2048 sets), for
// the two extremes of a set scan: a stream twice the capacity (every lookup
// misses and scans all 16 ways for the LRU victim) and a stream that fits
// (every lookup after the first pass hits). Items are lookups; a step moving B
// bytes costs about B / line_bytes of them (docs/memory.md, "CMEM": model speed).
// Run: build/bench/cmem_bench (figures depend on the machine; quote medians).
#include <benchmark/benchmark.h>

#include "sim/hbm/cmem_tags.hpp"

namespace {

constexpr uint64_t kLineBytes = 4096;
constexpr uint64_t kWays = 16;
constexpr uint64_t kSets = (uint64_t{128} << 20) / kLineBytes / kWays;

void lookups(benchmark::State& state, uint64_t span_lines) {
  tpusim::CmemTags tags(kSets, kWays);
  uint64_t line = 0, hits = 0;
  for (auto _ : state) {
    for (int i = 0; i < 4096; ++i) {
      hits += tags.access(line, (line & 3) == 0).hit;  // a write every fourth line
      line = line + 1 == span_lines ? 0 : line + 1;
    }
  }
  benchmark::DoNotOptimize(hits);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * 4096));
  state.counters["hit_rate"] = static_cast<double>(hits) / static_cast<double>(state.iterations() * 4096);
}

void BM_CmemLookupsMissing(benchmark::State& state) {
  lookups(state, 2 * kSets * kWays);
}
void BM_CmemLookupsHitting(benchmark::State& state) {
  lookups(state, kSets * kWays / 2);
}

BENCHMARK(BM_CmemLookupsMissing);
BENCHMARK(BM_CmemLookupsHitting);

}  // namespace

BENCHMARK_MAIN();
