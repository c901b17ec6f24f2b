// Speed and memory of the command-level DRAM model (sim/hbm/dram). Simulated
// bursts per wall second for a sequential stream and for random 64 B reads
// (2 bursts each), on one HBM2 and one HBM3 stack, under the closed-loop
// source of the tests (2 x queue_depth requests outstanding per pseudo-channel);
// and one run streaming 1 GiB on HBM3, reporting the model's footprint
// (DramModel::footprintBytes: the model, its pseudo-channels and banks, and the
// peak queued and in-flight entries) and the growth of the process's resident
// set between the model's construction and the end of the stream.
// Run: build/bench/dram_bench (figures depend on the machine; quote medians).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>

#include <random>

#include "sim/hbm/dram/dram_presets.hpp"
#include "tests/hbm/dram_driver.hpp"

namespace {

using tpusim::DramConfig;

// Resident set size now, from /proc/self/statm (pages).
long rssKiB() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

void stream(benchmark::State& state, DramConfig (*preset)()) {
  const DramConfig config = preset();
  const uint64_t bursts = 1 << 16;
  for (auto _ : state) {
    tpusim::StatsRegistry stats;
    tpusim::DramModel model(config, stats);
    const uint64_t burst = tpusim::burstBytes(config);
    const auto r = tpusim::driveClosedLoop(model, bursts, [burst](uint64_t i) { return i * burst; });
    benchmark::DoNotOptimize(r.last_done);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * bursts));
}

void random64(benchmark::State& state, DramConfig (*preset)()) {
  const DramConfig config = preset();
  const uint64_t requests = 1 << 15;
  std::mt19937_64 random(42);
  std::vector<uint64_t> base(requests);
  for (uint64_t& b : base) b = (random() % (tpusim::capacityBytes(config) / 64)) * 64;
  const uint64_t burst = tpusim::burstBytes(config);
  for (auto _ : state) {
    tpusim::StatsRegistry stats;
    tpusim::DramModel model(config, stats);
    const auto r =
        tpusim::driveClosedLoop(model, 2 * requests, [&](uint64_t i) { return base[i / 2] + (i % 2) * burst; });
    benchmark::DoNotOptimize(r.last_done);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * 2 * requests));
}

void stream1GiB(benchmark::State& state) {
  const DramConfig config = tpusim::hbm3Config();
  const uint64_t burst = tpusim::burstBytes(config);
  const uint64_t bursts = (1ull << 30) / burst;
  for (auto _ : state) {
    const long rss_before = rssKiB();
    tpusim::StatsRegistry stats;
    tpusim::DramModel model(config, stats);
    const auto r = tpusim::driveClosedLoop(model, bursts, [burst](uint64_t i) { return i * burst; });
    state.counters["model_footprint_KiB"] = static_cast<double>(model.footprintBytes()) / 1024;
    state.counters["peak_queued"] = static_cast<double>(model.peakQueued());
    state.counters["rss_growth_KiB"] = static_cast<double>(rssKiB() - rss_before);
    state.counters["simulated_GBps"] = r.bytesPerCycle(burst) * config.clock_mhz / 1000;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * bursts));
}

}  // namespace

BENCHMARK_CAPTURE(stream, hbm2, tpusim::hbm2Config)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(stream, hbm3, tpusim::hbm3Config)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(random64, hbm2, tpusim::hbm2Config)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(random64, hbm3, tpusim::hbm3Config)->Unit(benchmark::kMillisecond);
BENCHMARK(stream1GiB)->Iterations(1)->Unit(benchmark::kSecond);

BENCHMARK_MAIN();
