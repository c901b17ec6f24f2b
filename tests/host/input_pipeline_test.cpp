// The input pipeline against its closed forms: the steady state is
// min(storage, threads / map time, PCIe) examples per second in each regime,
// prefetch hides bursts of fast steps, a memory cache speeds up epoch 2.
#include "sim/host/input_pipeline.hpp"

#include <gtest/gtest.h>

#include "sim/host/host_model.hpp"
#include "tests/host/host_test_config.hpp"

namespace tpusim {
namespace {

constexpr uint64_t kBatch = 32;

// Steady-state seconds per step of `steps` steps of zero compute: the device
// takes batches as fast as the host and PCIe can deliver them.
double steadyStepSeconds(const HostPipelineConfig& host, uint64_t steps = 200) {
  StatsRegistry stats;
  HostModel model(host, kBatch, 0, stats, "host0");
  return model.run(0, steps).meanStepSeconds(steps / 2);
}

TEST(InputPipelineSteadyState, StorageBound) {
  const HostPipelineConfig host = test::roundHost();
  const PipelineRates rates = pipelineRates(host, kBatch);
  // storage 1e9 / 1e6 = 1000/s; map 8 / 1 ms = 8000/s; PCIe 32 / (32 x 1e5 / 1e10 s) = 1e5/s
  EXPECT_DOUBLE_EQ(rates.storage, 1000);
  EXPECT_DOUBLE_EQ(rates.map, 8000);
  EXPECT_DOUBLE_EQ(rates.pcie, 1e5);
  EXPECT_STREQ(rates.limiter(), "storage read");
  // 32 examples / 1000 per s = 32 ms per step
  EXPECT_NEAR(steadyStepSeconds(host), 0.032, 1e-12);
  EXPECT_NEAR(steadyStepSeconds(host), kBatch / rates.bound(), 1e-12);
}

TEST(InputPipelineSteadyState, MapBound) {
  HostPipelineConfig host = test::roundHost();
  host.storage_read_gbps = 100;  // 10 us per example: 1e5/s
  host.num_parallel_calls = 4;
  host.map_us = 2000;  // 4 / 2 ms = 2000/s
  const PipelineRates rates = pipelineRates(host, kBatch);
  EXPECT_DOUBLE_EQ(rates.map, 2000);
  EXPECT_STREQ(rates.limiter(), "map");
  // 32 / 2000 = 16 ms per step
  EXPECT_NEAR(steadyStepSeconds(host), 0.016, 1e-12);
}

TEST(InputPipelineSteadyState, PcieBound) {
  HostPipelineConfig host = test::roundHost();
  host.storage_read_gbps = 100;  // 1e5/s
  host.num_parallel_calls = 64;
  host.map_us = 100;                        // 64 / 100 us = 640000/s
  host.infeed_bytes_per_example = 1000000;  // a batch is 3.2e7 bytes: 3.2 ms at 10 GB/s
  host.pcie_latency_us = 10;                // + 10 us per batch = 3.21 ms
  const PipelineRates rates = pipelineRates(host, kBatch);
  EXPECT_NEAR(rates.pcie, 32 / 3.21e-3, 1e-6);
  EXPECT_STREQ(rates.limiter(), "pcie");
  EXPECT_NEAR(steadyStepSeconds(host), 3.21e-3, 1e-12);
}

TEST(InputPipelineSteadyState, ComputeBoundWhenTheHostIsFaster) {
  // Storage-bound host: 32 ms per batch; 50 ms of compute + 0.32 ms of PCIe per step.
  const HostPipelineConfig host = test::roundHost();
  StatsRegistry stats;
  HostModel model(host, kBatch, 0, stats, "host0");
  const HostRun run = model.run(picosFromMicros(50000), 100);
  EXPECT_NEAR(run.meanStepSeconds(50), 0.05032, 1e-12);
  EXPECT_EQ(run.bottleneck, HostBottleneck::kDevice);
  for (size_t k = 1; k < run.steps.size(); ++k) EXPECT_EQ(run.steps[k].input_stall, 0u) << "step " << k;
}

TEST(InputPipeline, SerialScheduleOfTheFirstBatchIsExact) {
  // One thread, no prefetch, 2 examples per batch: read 1 ms, then map 1 ms
  // while the second example is read, then map it: 1 + 1 + 1 = 3 ms.
  HostPipelineConfig host = test::roundHost();
  host.num_parallel_calls = 1;
  host.prefetch_batches = 0;
  StatsRegistry stats;
  InputPipeline pipeline(host, 2, stats, "host0");
  EXPECT_EQ(pipeline.produceNext(0), 3000000000u);
  // The next batch, asked for at 10 ms: 10 + 3 = 13 ms.
  EXPECT_EQ(pipeline.produceNext(10000000000u), 13000000000u);
  EXPECT_EQ(stats.value("host0.examples"), 4);
  EXPECT_EQ(stats.value("host0.read.bytes"), 4e6);
  EXPECT_EQ(stats.value("host0.map.busy_ps"), 4e9);
}

TEST(InputPipeline, PrefetchHidesBurstsOfFastSteps) {
  // The host builds one batch per 10 ms (10 examples x 1 ms on one thread;
  // reads of 1000 bytes at 100 GB/s are 10 ns). The device alternates 4 steps
  // of 20 ms with 4 steps of 1 ms: 84 ms per 8 steps, slower on average than
  // the host's 80 ms, but a burst of fast steps outruns it.
  HostPipelineConfig host = test::roundHost();
  host.storage_read_gbps = 100;
  host.example_bytes = 1000;
  host.num_parallel_calls = 1;
  host.infeed_bytes_per_example = 1000;  // 1 us per batch on PCIe
  std::vector<Picos> compute;
  for (int cycle = 0; cycle < 20; ++cycle) {
    for (int i = 0; i < 4; ++i) compute.push_back(picosFromMicros(20000));
    for (int i = 0; i < 4; ++i) compute.push_back(picosFromMicros(1000));
  }
  auto stallAfterFirstCycle = [&](uint64_t depth) {
    host.prefetch_batches = depth;
    StatsRegistry stats;
    HostModel model(host, 10, 0, stats, "host0");
    const HostRun run = model.run(compute);
    Picos stall = 0;
    for (size_t k = 8; k < run.steps.size(); ++k) stall += run.steps[k].input_stall;
    return secondsFromPicos(stall);
  };
  // Depth 1: a batch starts when the previous one is taken and is ready
  // 10 ns + 10 ms later. The first fast step of a burst finds its batch built
  // during the last slow step; the other three, and the slow step after the
  // burst, each wait 10.00001 - 1 - 0.001 = 8.99901 ms. Steps 8..159 hold
  // 19 such bursts' worth: 19 x 4 x 8.99901 ms.
  EXPECT_NEAR(stallAfterFirstCycle(1), 19 * 4 * 8.99901e-3, 1e-9);
  // Depth 8 holds a whole burst: once the buffer has filled, no step waits.
  EXPECT_EQ(stallAfterFirstCycle(8), 0);
}

TEST(InputPipeline, MemoryCacheMakesTheSecondEpochFaster) {
  // 40 steps, epochs of 10 batches of 32. Epoch 1 is storage-bound: 32 ms per step.
  // Epochs 2 to 4 read from memory: 64 threads x 100 us map 32 examples per 50 us,
  // slower than PCIe's 32 x 1e4 bytes / 10 GB/s = 32 us: 50 us per step.
  HostPipelineConfig host = test::roundHost();
  host.num_parallel_calls = 64;
  host.map_us = 100;
  host.infeed_bytes_per_example = 10000;
  host.epoch_examples = 320;
  auto run = [&](bool cache, HostRun& out) {
    host.cache_in_memory = cache;
    StatsRegistry stats;
    HostModel model(host, kBatch, 0, stats, "host0");
    out = model.run(0, 40);
    return stats.value("host0.read.cache_hits");
  };
  HostRun cached, uncached;
  EXPECT_EQ(run(true, cached), 30 * 32);  // epochs 2 to 4
  EXPECT_EQ(run(false, uncached), 0);
  auto period = [](const HostRun& r, size_t from, size_t to) {
    return secondsFromPicos(r.steps[to].start - r.steps[from].start) / static_cast<double>(to - from);
  };
  EXPECT_NEAR(period(cached, 2, 9), 0.032, 1e-12);
  // Batches finish in pairs (two batches of 32 fill 64 threads): 68 us, then 32 us.
  EXPECT_NEAR(period(cached, 20, 38), 50e-6, 1e-12);
  EXPECT_NEAR(period(uncached, 20, 39), 0.032, 1e-12);
  EXPECT_NEAR(pipelineRates(host, kBatch, true).bound(), 640000, 1e-6);
}

}  // namespace
}  // namespace tpusim
