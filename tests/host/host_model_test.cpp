// The host feeding the device: the input-bound case and its recovery on the
// tpuv4 preset's ImageNet-style pipeline, checkpoints, stats, and the
// input-bound table of docs/host.md (a golden file).
#include "sim/host/host_model.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "sim/common/error.hpp"
#include "sim/common/params.hpp"
#include "tests/host/host_test_config.hpp"

namespace tpusim {
namespace {

constexpr uint64_t kBatch = 128;
constexpr Picos kCompute = 20000000000;  // 20 ms of device compute per step

HostPipelineConfig tpuv4Host(int64_t threads, int64_t prefetch) {
  HardwareParams params = HardwareParams::load("tpuv4");
  params.set("host.num_parallel_calls", std::to_string(threads));
  params.set("host.prefetch_batches", std::to_string(prefetch));
  return hostConfigOf(params.config());
}

// tpuv4's host: reads of 110000 bytes at 2 GB/s = 55 us, map 2 ms per example,
// a batch of 128 x 150528 bytes over 15.75 GB/s PCIe = 1223.338667 us + 2 us.
constexpr double kPcieMs = 1.225338667;

TEST(HostInputBound, SerialPipelineStallsTheDeviceAndNamesTheHost) {
  // One thread, no prefetch: a batch is built only when asked for,
  // 55 us + 128 x 2 ms = 256.055 ms, then PCIe, then 20 ms of compute:
  // 256.055 + 1.225338667 + 20 = 277.280338667 ms per step, 7.2 % busy.
  StatsRegistry stats;
  HostModel model(tpuv4Host(1, 0), kBatch, 0, stats, "host0");
  const HostRun run = model.run(kCompute, 20);
  const double step_ms = 256.055 + kPcieMs + 20;
  EXPECT_NEAR(run.meanStepSeconds(0) * 1e3, step_ms, 1e-9);
  EXPECT_NEAR(run.deviceUtilization(), 20 / step_ms, 1e-9);
  EXPECT_LT(run.deviceUtilization(), 0.08);
  EXPECT_NEAR(stats.value("host0.device.utilization"), 20 / step_ms, 1e-9);
  EXPECT_NEAR(stats.value("host0.input_stall_fraction"), 256.055 / step_ms, 1e-9);
  EXPECT_GT(stats.value("host0.input_stall_fraction"), 0.9);
  // The one map thread is busy 256 ms of each step; the read stream 7.04 ms.
  EXPECT_NEAR(stats.value("host0.map.utilization"), 256 / step_ms, 1e-9);
  EXPECT_NEAR(stats.value("host0.read.utilization"), 7.04 / step_ms, 1e-9);
  EXPECT_EQ(run.bottleneck, HostBottleneck::kMap);
  EXPECT_STREQ(bottleneckName(run.bottleneck), "host map");
  EXPECT_EQ(stats.value("host0.bottleneck"), 2);
  // The host, each direction of its PCIe link and its checkpoint writer say what they are.
  EXPECT_EQ(stats.kindOf("host0"), UnitKind::kHost);
  EXPECT_EQ(stats.kindOf("host0.pcie.infeed"), UnitKind::kPcie);
  EXPECT_EQ(stats.kindOf("host0.pcie.outfeed"), UnitKind::kPcie);
  EXPECT_EQ(stats.kindOf("host0.checkpoint"), UnitKind::kCheckpoint);
}

TEST(HostInputBound, ParallelMapAndPrefetchRecover) {
  // 32 threads map a batch in 4 waves of 2 ms (8 ms; reads take 7.04 ms) and
  // prefetch builds it during the previous step: only batch 0 is waited for,
  // ready at 31 x 55 us + 4 x 2 ms = 9.76 ms. Then every step is
  // 1.225338667 + 20 = 21.225338667 ms: steady utilization 94.2 %.
  StatsRegistry stats;
  HostModel model(tpuv4Host(32, 2), kBatch, 0, stats, "host0");
  const HostRun run = model.run(kCompute, 100);
  EXPECT_EQ(run.input_stall, 9760000000u);
  EXPECT_NEAR(run.meanStepSeconds(1) * 1e3, kPcieMs + 20, 1e-9);
  const double elapsed_ms = 9.76 + 100 * (kPcieMs + 20);
  EXPECT_NEAR(run.deviceUtilization(), 100 * 20 / elapsed_ms, 1e-9);
  EXPECT_GT(run.deviceUtilization(), 0.93);
  EXPECT_EQ(run.bottleneck, HostBottleneck::kDevice);
  EXPECT_EQ(stats.value("host0.bottleneck"), 0);
  EXPECT_EQ(stats.value("host0.pcie.infeed.bytes"), 100.0 * kBatch * 150528);
  EXPECT_EQ(stats.value("host0.pcie.infeed.transfers"), 100);
}

TEST(HostInputBound, PrefetchWithTooFewThreadsIsStillMapBound) {
  // 8 threads map a batch in 128 x 2 ms / 8 = 32 ms, longer than the device's
  // 21.225 ms: the step is 32 ms and the device waits 10.775 ms of each.
  // Compute is the largest share (62 %), but the map sets the step.
  StatsRegistry stats;
  HostModel model(tpuv4Host(8, 2), kBatch, 0, stats, "host0");
  const HostRun run = model.run(kCompute, 100);
  EXPECT_NEAR(run.meanStepSeconds(50) * 1e3, 32, 1e-9);
  EXPECT_EQ(run.steps[80].input_stall, 32000000000u - 21225338667u);
  EXPECT_GT(run.compute, run.input_stall);
  EXPECT_EQ(run.bottleneck, HostBottleneck::kMap);
}

TEST(HostModel, CheckpointsStallTheDeviceForCopyAndWrite) {
  // Compute-bound (50 ms steps, the host builds a batch in 32 ms), a
  // checkpoint of 1e8 bytes after steps 9, 19 and 29: 1e8 / 10 GB/s = 10 ms
  // over PCIe + 1e8 / 1 GB/s = 100 ms to storage = 110 ms each.
  HostPipelineConfig host = test::roundHost();
  host.checkpoint_every_steps = 10;
  StatsRegistry with_stats, without_stats;
  HostModel with(host, 32, 100000000, with_stats, "host0");
  const HostRun checkpointed = with.run(picosFromMicros(50000), 30);
  host.checkpoint_every_steps = 0;
  HostModel without(host, 32, 100000000, without_stats, "host0");
  const HostRun plain = without.run(picosFromMicros(50000), 30);
  EXPECT_EQ(with_stats.value("host0.checkpoint.count"), 3);
  EXPECT_EQ(with_stats.value("host0.checkpoint.bytes"), 3e8);
  EXPECT_EQ(with_stats.value("host0.checkpoint.stall_ps"), 330e9);
  EXPECT_EQ(with_stats.value("host0.pcie.outfeed.bytes"), 3e8);
  EXPECT_EQ(checkpointed.steps[9].checkpoint, 110000000000u);
  EXPECT_EQ(checkpointed.steps[8].checkpoint, 0u);
  EXPECT_EQ(checkpointed.elapsed, plain.elapsed + 330000000000u);
  EXPECT_EQ(without_stats.value("host0.checkpoint.count"), 0);
}

TEST(HostModel, RunsAreDeterministicAndOncePerModel) {
  StatsRegistry a_stats, b_stats;
  HostModel a(tpuv4Host(4, 1), kBatch, 0, a_stats, "host0");
  HostModel b(tpuv4Host(4, 1), kBatch, 0, b_stats, "host0");
  const HostRun first = a.run(kCompute, 50);
  const HostRun second = b.run(kCompute, 50);
  ASSERT_EQ(first.steps.size(), second.steps.size());
  for (size_t k = 0; k < first.steps.size(); ++k) EXPECT_EQ(first.steps[k].end, second.steps[k].end);
  EXPECT_THROW(a.run(kCompute, 1), Error);
}

TEST(HostModel, StatsOutliveTheModel) {
  // The serial case again (277.280338667 ms per step), read after the model is gone.
  StatsRegistry stats;
  {
    HostModel model(tpuv4Host(1, 0), kBatch, 0, stats, "host0");
    model.run(kCompute, 4);
  }
  EXPECT_NEAR(stats.value("host0.device.utilization"), 20 / (256.055 + kPcieMs + 20), 1e-9);
  EXPECT_EQ(stats.value("host0.bottleneck"), 2);
  EXPECT_EQ(stats.value("host0.steps"), 4);
}

// docs/host.md's input-bound table: steady step time and device utilization
// against map threads and prefetch depth, tpuv4 host, batch 128, 20 ms compute.
std::string inputBoundTable() {
  std::ostringstream out;
  out << "num_parallel_calls prefetch_batches step_ms device_utilization bottleneck\n";
  for (int64_t threads : {1, 2, 4, 8, 16, 32, 64}) {
    for (int64_t prefetch : {0, 1, 2}) {
      StatsRegistry stats;
      HostModel model(tpuv4Host(threads, prefetch), kBatch, 0, stats, "host0");
      const HostRun run = model.run(kCompute, 100);
      char line[128];
      std::snprintf(line, sizeof(line), "%lld %lld %.3f %.3f %s\n", static_cast<long long>(threads),
                    static_cast<long long>(prefetch), run.meanStepSeconds(50) * 1e3, run.deviceUtilization(),
                    bottleneckName(run.bottleneck));
      out << line;
    }
  }
  return out.str();
}

TEST(HostInputBound, TableMatchesGolden) {
  const std::string text = inputBoundTable();
  const std::string path = TPUSIM_SOURCE_DIR "/tests/golden/host_input_bound.txt";
  if (std::getenv("TPUSIM_UPDATE_GOLDEN")) std::ofstream(path) << text;
  std::ifstream file(path);
  ASSERT_TRUE(file) << path << " is missing; scripts/update-golden.sh writes it";
  std::stringstream golden;
  golden << file.rdbuf();
  EXPECT_EQ(text, golden.str()) << "regenerate with scripts/update-golden.sh after an intended change";
}

}  // namespace
}  // namespace tpusim
