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

TEST(Dma, BackToBackTransfersOnOneEngineEachPayLatency) {
  testing::ProgramBuilder b;
  b.dma(100'000, true, {});  // 0 .. 100 + 100
  b.dma(100'000, true, {});  // the engine is blocking: 200 .. 400
  EXPECT_EQ(simulate(b.program(), testHardware()).total_cycles, 400u);
}

}  // namespace
}  // namespace tpusim
