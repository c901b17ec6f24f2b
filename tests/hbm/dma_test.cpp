// DMA engines and HBM at bandwidth-and-latency level, against the closed form.
#include <gtest/gtest.h>

#include "sim/chip/driver.hpp"
#include "tests/support/program_builder.hpp"
#include "tests/support/test_hardware.hpp"

namespace tpusim {
namespace {

// 1 GHz and 1000 GB/s: 1000 bytes per cycle; 100 ns latency = 100 cycles.
HardwareParams testHardware() {
  HardwareParams hw = testing::oneCoreAt1GHz();
  hw.set("hbm.bandwidth_gbps", "1000");
  hw.set("hbm.latency_ns", "100");
  return hw;
}

TEST(Dma, IsolatedTransferTakesBytesOverBandwidthPlusLatency) {
  testing::ProgramBuilder b;
  b.dma(1'000'000, true, {});  // 1e6 B / 1000 B per cycle = 1000, + 100 latency = 1100
  const SimResult result = simulate(b.program(), testHardware());
  EXPECT_EQ(result.total_cycles, 1100u);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.hbm.bytes_read"), 1e6);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.hbm.busy_cycles"), 1000);
}

TEST(Dma, PartialCycleRoundsUp) {
  testing::ProgramBuilder b;
  b.dma(1001, true, {});  // ceil(1001 / 1000) = 2, + 100 = 102
  EXPECT_EQ(simulate(b.program(), testHardware()).total_cycles, 102u);
}

TEST(Dma, TwoEnginesShareTheHbmBandwidth) {
  testing::ProgramBuilder b;
  b.dma(1'000'000, true, {}, 0, 0);   // bus 0 .. 1000, done 1100
  b.dma(1'000'000, false, {}, 0, 1);  // waits for the bus: 1000 .. 2000, done 2100
  const SimResult result = simulate(b.program(), testHardware());
  EXPECT_EQ(result.total_cycles, 2100u);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.hbm.bytes_written"), 1e6);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.hbm.utilization"), 2000.0 / 2100.0);
}

SimResult twoLoads(const char* outstanding, int loads = 2) {
  HardwareParams hw = testHardware();
  hw.set("dma.max_outstanding", outstanding);
  testing::ProgramBuilder b;
  for (int i = 0; i < loads; ++i) b.dma(100'000, true, {});  // 100 bus cycles + 100 latency each
  return simulate(b.program(), hw);
}

TEST(Dma, WithOneOutstandingBackToBackTransfersEachPayLatency) {
  // First 0 .. 100 on the bus, done at 200; the second issues when the first retires: 200 .. 300, done 400.
  const SimResult result = twoLoads("1");
  EXPECT_EQ(result.total_cycles, 400u);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.core0.dma0.busy_cycles"), 400);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.core0.dma0.peak_in_flight"), 1);
}

TEST(Dma, WithTwoOutstandingTheSecondTransferHidesTheFirstsLatency) {
  // Both issue at 0: the first holds the bus 0 .. 100 (done 200), the second 100 .. 200 (done 300).
  const SimResult result = twoLoads("2");
  EXPECT_EQ(result.total_cycles, 300u);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.core0.dma0.busy_cycles"), 300);  // cycles with one in flight or more
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.core0.dma0.peak_in_flight"), 2);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.core0.dma0.bytes"), 200'000);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.core0.dma0.instructions"), 2);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.hbm.busy_cycles"), 200);
}

TEST(Dma, AThirdTransferWaitsForAFreeSlot) {
  // Two outstanding: the third issues when the first retires at 200, holds the bus
  // 200 .. 300 and is done at 400.
  EXPECT_EQ(twoLoads("2", 3).total_cycles, 400u);
  // Three outstanding: all issue at 0; the bus is busy 0 .. 300 and the last is done at 400 too,
  // since the one channel serves them in turn.
  EXPECT_EQ(twoLoads("3", 3).total_cycles, 400u);
  EXPECT_EQ(twoLoads("1", 3).total_cycles, 600u);
}

TEST(Dma, DependencyWaitCountsOnlyCyclesWithNothingInFlight) {
  HardwareParams hw = testHardware();
  hw.set("dma.max_outstanding", "2");
  testing::ProgramBuilder b;
  b.dma(100'000, true, {});                    // 0 .. 200
  const uint32_t vec = b.vector(1024, 1, {});  // 2 latency + ceil(1024 / 1024) = 3 cycles: 0 .. 3
  b.dma(100'000, true, {vec});                 // issues at 3: bus 100 .. 200, done 300
  const SimResult result = simulate(b.program(), hw);
  EXPECT_EQ(result.total_cycles, 300u);
  // The second load waited 0 .. 3 for the vector op while the first was in flight: busy, not waiting.
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.core0.dma0.dependency_wait_cycles"), 0);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.core0.dma0.busy_cycles"), 300);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.core0.dma0.idle_cycles"), 0);
}

}  // namespace
}  // namespace tpusim
