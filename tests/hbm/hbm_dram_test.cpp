// The chip's HBM on the command-level DRAM model (hbm.model = dram, dram_memoized),
// against the standalone DramModel and against each other.
#include <gtest/gtest.h>

#include "sim/chip/driver.hpp"
#include "sim/common/error.hpp"
#include "sim/hbm/burst_walk.hpp"
#include "sim/hbm/clock_ratio.hpp"
#include "sim/hbm/dram/dram_model.hpp"
#include "sim/hbm/dram_setup.hpp"
#include "tests/support/program_builder.hpp"

namespace tpusim {
namespace {

constexpr uint64_t kKiB = 1024;

// tpuv4 on one core: 1050 MHz, four HBM2 stacks at 2.34375 Gb/s (DRAM clock 1171.875 MHz), no path latency.
HardwareParams dramHardware(const char* model) {
  HardwareParams hw = HardwareParams::load("tpuv4");
  hw.set("chip.tensor_cores", "1");
  hw.set("hbm.model", model);
  hw.set("hbm.latency_ns", "0");
  return hw;
}

// DRAM cycles from arrival at cycle 0 to the last burst of `access` alone on a fresh model.
uint64_t standaloneCycles(const HardwareParams& hw, const HbmAccess& access) {
  StatsRegistry stats;
  const DramConfig config = hbmDramConfig(hw.config().hbm());
  DramModel model(config, stats);
  uint64_t id = 0, last = 0;
  forEachBurst(access, burstBytes(config), [&](uint64_t address) {
    model.enqueue(DramRequest{address, burstBytes(config), access.is_write, 0, id++});
  });
  while (!model.idle()) {
    for (const DramCompletion& done : model.step()) last = std::max(last, done.done_cycle);
  }
  return last;
}

HbmAccess contiguous(uint64_t address, uint64_t bytes, bool write = false) {
  return HbmAccess{address, 1, bytes, bytes, write};
}

TEST(HbmDram, TheClockRatioConvertsExactly) {
  const ClockRatio ratio(1050e6, 1171.875e6);  // 112 : 125 once reduced
  EXPECT_EQ(ratio.dramAtOrAfter(112), 125u);
  EXPECT_EQ(ratio.dramAtOrAfter(1), 2u);  // 125 / 112 = 1.12 -> 2
  EXPECT_EQ(ratio.dramAtOrBefore(1), 1u);
  EXPECT_EQ(ratio.coreAtOrAfter(125), 112u);
  EXPECT_EQ(ratio.coreAtOrAfter(126), 113u);  // 126 x 112 / 125 = 112.9 -> 113
  // Over 10^12 cycles there is no drift: 112e12 core cycles are exactly 125e12 DRAM cycles.
  EXPECT_EQ(ratio.dramAtOrAfter(112'000'000'000'000), 125'000'000'000'000u);
}

TEST(HbmDram, AnIsolatedTransferTakesTheStandaloneModelsTime) {
  const HardwareParams hw = dramHardware("dram");
  for (const HbmAccess& access : {contiguous(0, 64 * kKiB), contiguous(3 * 8 * kKiB + 96, 10'000, true),
                                  HbmAccess{1024 * kKiB, 64, 256, 16 * kKiB, false}}) {
    testing::ProgramBuilder b;
    b.dmaAt(access.address, access.rows, access.row_bytes, access.row_stride, !access.is_write, {});
    const SimResult result = simulate(b.program(), hw);
    // The last burst ends at DRAM cycle d (1171.875 MHz); the transfer at the first core cycle at or after it.
    const uint64_t d = standaloneCycles(hw, access);
    EXPECT_EQ(result.total_cycles, ClockRatio(1050e6, 1171.875e6).coreAtOrAfter(d)) << access.address;
    uint64_t bursts = 0;
    forEachBurst(access, 32, [&](uint64_t) { ++bursts; });
    EXPECT_DOUBLE_EQ(result.stats->value("chip0.hbm.dram.bytes"), 32.0 * static_cast<double>(bursts));
  }
  // The stride reaches the DRAM: 64 rows of 256 B, 16 KiB apart, are not 16 KiB in a row.
  EXPECT_NE(standaloneCycles(hw, HbmAccess{1024 * kKiB, 64, 256, 16 * kKiB, false}),
            standaloneCycles(hw, contiguous(1024 * kKiB, 16 * kKiB)));
}

TEST(HbmDram, ThePathLatencyComesOnTop) {
  HardwareParams hw = dramHardware("dram");
  const HbmAccess access = contiguous(0, 64 * kKiB);
  testing::ProgramBuilder b;
  b.dmaAt(0, 1, access.row_bytes, 0, true, {});
  const uint64_t alone = simulate(b.program(), hw).total_cycles;
  hw.set("hbm.latency_ns", "100");  // 105 cycles at 1050 MHz
  EXPECT_EQ(simulate(b.program(), hw).total_cycles, alone + 105);
}

// Transfers one after another (each depends on the last), in different banks, before the first refresh.
testing::ProgramBuilder chainInFreshBanks() {
  // Four HBM2 stacks: an 8 KiB interleave over 64 pseudo-channels and 4 bank groups, 32 columns,
  // so bank b of every group starts at b x 256 KiB.
  testing::ProgramBuilder b;
  const uint32_t a = b.dmaAt(0, 1, 64 * kKiB, 0, true, {});
  const uint32_t s = b.dmaAt(256 * kKiB, 1, 64 * kKiB, 0, false, {a});
  const uint32_t c = b.dmaAt(512 * kKiB, 64, 256, kKiB, true, {s});  // strided within bank 2
  b.dmaAt(768 * kKiB + 4 * kKiB + 64, 1, 20'000, 0, true, {c});      // unaligned, bank 3
  return b;
}

TEST(HbmDram, MemoizedEqualsExactOnTransfersThatDoNotOverlap) {
  const SimResult exact = simulate(chainInFreshBanks().program(), dramHardware("dram"));
  const SimResult memo = simulate(chainInFreshBanks().program(), dramHardware("dram_memoized"));
  EXPECT_EQ(memo.total_cycles, exact.total_cycles);
  EXPECT_LT(exact.total_cycles, 3900u);  // before tREFI (3.9 us): no refresh in either
  for (const char* stat : {"reads", "writes", "activates", "row_hits", "row_misses", "row_conflicts", "refreshes"}) {
    const std::string name = std::string("chip0.hbm.dram.") + stat;
    EXPECT_EQ(memo.stats->value(name), exact.stats->value(name)) << name;
  }
  EXPECT_EQ(memo.stats->value("chip0.hbm.dram.memo_simulated"), 4);
}

TEST(HbmDram, TheMemoReusesATransfersKind) {
  // Two loads of 64 KiB one interleave (8 KiB) apart are the same kind: simulated once.
  testing::ProgramBuilder b;
  const uint32_t first = b.dmaAt(0, 1, 64 * kKiB, 0, true, {});
  b.dmaAt(256 * kKiB, 1, 64 * kKiB, 0, true, {first});
  const SimResult result = simulate(b.program(), dramHardware("dram_memoized"));
  EXPECT_EQ(result.stats->value("chip0.hbm.dram.memo_simulated"), 1);
  EXPECT_EQ(result.stats->value("chip0.hbm.dram.memo_reused"), 1);
  // Each starts on closed banks: 64 KiB over 64 pseudo-channels x 4 bank groups is one ACT per bank touched.
  EXPECT_EQ(result.stats->value("chip0.hbm.dram.activates"), 2 * 256);
  EXPECT_EQ(result.stats->value("chip0.hbm.dram.row_misses"), 2 * 256);
}

TEST(HbmDram, ConcurrentTransfersShareTheDram) {
  // Two 1 MiB loads at once on two engines: their bursts interleave in the DRAM queues, so
  // together they take less than one after the other, and no less than 2 MiB at the peak.
  const HardwareParams hw = dramHardware("dram");
  testing::ProgramBuilder both;
  both.dmaAt(0, 1, 1024 * kKiB, 0, true, {}, UINT32_MAX, 0, 0);
  both.dmaAt(8 * 1024 * kKiB, 1, 1024 * kKiB, 0, false, {}, UINT32_MAX, 0, 1);
  const SimResult together = simulate(both.program(), hw);
  const uint64_t alone = simulate(
                             [] {
                               testing::ProgramBuilder one;
                               one.dmaAt(0, 1, 1024 * kKiB, 0, true, {});
                               return one.program();
                             }(),
                             hw)
                             .total_cycles;
  EXPECT_LT(together.total_cycles, 2 * alone);
  // 1200 GB/s at 1050 MHz: 1142.86 B per cycle; 2 MiB / 1142.86 = 1835 cycles.
  EXPECT_GE(together.total_cycles, 1835u);
  EXPECT_DOUBLE_EQ(together.stats->value("chip0.hbm.dram.bytes"), 2.0 * 1024 * kKiB);
  EXPECT_GT(together.stats->value("chip0.hbm.bandwidth_utilization"), 0.5);
}

TEST(HbmDram, AStreamThroughTheChipReachesTheRefreshBound) {
  // 16 MiB read in one transfer. At 1171.875 MHz tRFC = ceil(260 ns) = 305 and tREFI =
  // ceil(3.9 us) = 4571 DRAM cycles. Over T cycles each of the 64 pseudo-channels refreshes
  // floor(T / tREFI) times, leaving 1 - floor(T / 4571) x 305 / T of the peak (93.33% as T grows).
  testing::ProgramBuilder b;
  b.dmaAt(0, 1, 16 * 1024 * kKiB, 0, true, {});
  const SimResult result = simulate(b.program(), dramHardware("dram"));
  const auto cycles = static_cast<uint64_t>(result.stats->value("chip0.hbm.dram.cycles"));
  EXPECT_EQ(result.stats->value("chip0.hbm.dram.refreshes"), 64.0 * static_cast<double>(cycles / 4571));
  const double bound = 1.0 - static_cast<double>(cycles / 4571) * 305.0 / static_cast<double>(cycles);
  const double efficiency = result.stats->value("chip0.hbm.dram.bandwidth_utilization");
  EXPECT_LT(efficiency, bound);
  EXPECT_GT(efficiency, 0.98 * bound);  // 98.9%: the first row activations and the last bursts
  // Through the chip (core cycles, from issue to the last burst) no more than that.
  EXPECT_LT(result.stats->value("chip0.hbm.bandwidth_utilization"), bound);
  EXPECT_GT(result.stats->value("chip0.hbm.dram.row_hit_rate"), 0.96);  // 31 of each row's 32 bursts hit
}

TEST(HbmDram, APeakThatDisagreesWithTheBandwidthIsAnError) {
  HardwareParams hw = dramHardware("dram");
  hw.set("hbm.stacks", "3");
  testing::ProgramBuilder b;
  b.dma(64, true, {});
  try {
    simulate(b.program(), hw);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kInvalidConfig);
    EXPECT_STREQ(error.what(),
                 "hbm.bandwidth_gbps = 1200 but 3 stack(s) of hbm2 at 2.34375 Gb/s per pin peak at 900 GB/s; set "
                 "hbm.stacks or hbm.pin_gbps so that they agree within 0.1%");
  }
  hw.set("hbm.model", "bandwidth");  // the bandwidth model does not use the DRAM's figures
  EXPECT_NO_THROW(simulate(b.program(), hw));
}

TEST(HbmDram, EveryPresetsDramPeaksAtItsBandwidth) {
  for (const char* preset : {"tpuv4", "tpuv5e", "tpuv5p"}) {
    const HardwareParams hw = HardwareParams::load(preset);
    const DramConfig config = hbmDramConfig(hw.config().hbm());
    EXPECT_NEAR(peakGBps(config), hw.config().hbm().bandwidth_gbps(), 1e-3 * hw.config().hbm().bandwidth_gbps())
        << preset;
    EXPECT_GE(static_cast<double>(capacityBytes(config)), hw.config().hbm().capacity_gib() * 1024 * 1024 * 1024)
        << preset;
  }
}

}  // namespace
}  // namespace tpusim
