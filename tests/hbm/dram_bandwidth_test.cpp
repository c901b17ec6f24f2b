// Bandwidth of DramModel against closed forms, under a closed-loop source
// that keeps 2 x queue_depth requests per pseudo-channel outstanding.
#include <gtest/gtest.h>

#include <iostream>
#include <random>

#include "sim/hbm/dram/dram_presets.hpp"
#include "tests/hbm/dram_driver.hpp"

namespace tpusim {
namespace {

struct Measured {
  double efficiency;  // bytes per cycle / peak bytes per cycle
  double bytes_per_cycle;
  uint64_t cycles;
};

Measured stream(const DramConfig& config, uint64_t bursts, StatsRegistry& stats) {
  DramModel model(config, stats);
  const uint64_t burst = burstBytes(config);
  const DriveResult r = driveClosedLoop(model, bursts, [burst](uint64_t i) { return i * burst; });
  return {r.bytesPerCycle(burst) / peakBytesPerCycle(config), r.bytesPerCycle(burst), r.last_done};
}

// 64-byte reads at random 64-byte-aligned addresses: two bursts each.
Measured random64(const DramConfig& config, uint64_t requests, StatsRegistry& stats) {
  DramModel model(config, stats);
  std::mt19937_64 random(42);
  std::vector<uint64_t> base(requests);
  for (uint64_t& b : base) b = (random() % (capacityBytes(config) / 64)) * 64;
  const uint64_t burst = burstBytes(config);
  const DriveResult r = driveClosedLoop(model, 2 * requests, [&](uint64_t i) { return base[i / 2] + (i % 2) * burst; });
  return {r.bytesPerCycle(burst) / peakBytesPerCycle(config), r.bytesPerCycle(burst), r.last_done};
}

void report(const std::string& key, double value) {
  ::testing::Test::RecordProperty(key, std::to_string(value));
  std::cout << key << " = " << value << "\n";
}

TEST(DramBandwidth, SequentialReadsReachNinetyPercentOfPeak) {
  // 32 MiB of sequential 32 B reads under ro_ba_co_bg_ch_pc: consecutive bursts
  // of a pseudo-channel change bank group (tCCD_S = burst, so the bus can stay
  // full) and each ACT opens a 1 KiB page that serves 32 bursts (hit rate at most
  // 31 / 32 = 96.9%), issued well ahead of its first RD. What is
  // lost is all-bank refresh: tRFC / tREFI = 260 / 3900 = 6.7% (HBM2) and
  // 1120 / 12480 = 9.0% (HBM3), plus the precharge and re-activate around each
  // REF. The issue asks for at least 90% of peak.
  for (const DramConfig& config : {hbm2Config(), hbm3Config()}) {
    StatsRegistry stats;
    const Measured m = stream(config, 1 << 20, stats);
    report(config.name + "_stream_efficiency", m.efficiency);
    report(config.name + "_stream_GBps", m.bytes_per_cycle * config.clock_mhz / 1000);
    EXPECT_GE(m.efficiency, 0.90) << config.name;
    EXPECT_GT(stats.value("dram.row_hit_rate"), 0.96) << config.name;
    EXPECT_LE(stats.value("dram.row_hit_rate"), 31.0 / 32) << config.name;
    // The data bus was busy no more than the wall-clock cycles allow.
    EXPECT_LE(stats.value("dram.bandwidth_utilization"), 1.0);
  }
}

TEST(DramBandwidth, EveryPresetStreamsWithinItsRefreshBound) {
  // A smoke run of every preset. All-bank refresh idles each data bus tRFC of
  // every tREFI, so a stream's efficiency is at most about 1 - tRFC / tREFI
  // (HBM2 0.933, HBM2E 1 - 560 / 6240 = 0.910, HBM3 0.910; the first interval of a
  // run has no REF, hence the 1% slack above) and, losing only the precharge and
  // re-activate around each REF, within 2% of it below.
  for (const DramConfig& config : {hbm2Config(), hbm2eConfig(), hbm3Config()}) {
    StatsRegistry stats;
    const Measured m = stream(config, 1 << 19, stats);
    const double bound = 1.0 - static_cast<double>(config.timing.tRFC) / static_cast<double>(config.timing.tREFI);
    report(config.name + "_stream_efficiency_over_refresh_bound", m.efficiency / bound);
    EXPECT_LE(m.efficiency, bound + 0.01) << config.name;
    EXPECT_GE(m.efficiency, bound - 0.02) << config.name;
  }
}

TEST(DramBandwidth, RandomReadsStayUnderTheActivateBound) {
  // Random 64 B reads: almost every burst needs its own ACT (a row hit needs
  // the same 1 KiB page of the same bank, odds ~1 / rows). ACTs per
  // pseudo-channel per cycle are bounded by min(banks / tRC, 4 / tFAW, 1 / tRRD_S):
  //   HBM2: min(16 / 47, 4 / 30, 1 / 4) = 4 / 30 = 0.1333, x 32 B x 16 pc = 68.3 B/cycle (26.7% of 256)
  //   HBM3: min(16 / 151, 4 / 52, 1 / 8) = 4 / 52 = 0.0769, x 32 B x 32 pc = 78.8 B/cycle (30.8% of 256)
  // Bursts <= ACTs + row hits, so bytes/cycle <= bound + hits x 32 / cycles.
  for (const DramConfig& config : {hbm2Config(), hbm3Config()}) {
    StatsRegistry stats;
    const Measured m = random64(config, 100000, stats);
    const DramTiming& t = config.timing;
    const double per_pc = std::min({static_cast<double>(banksPerPseudoChannel(config)) / static_cast<double>(t.tRC),
                                    4.0 / static_cast<double>(t.tFAW), 1.0 / static_cast<double>(t.tRRD_S)});
    const double bound = per_pc * static_cast<double>(burstBytes(config) * pseudoChannelCount(config));
    const double hits =
        stats.value("dram.row_hits") * static_cast<double>(burstBytes(config)) / static_cast<double>(m.cycles);
    report(config.name + "_random64_GBps", m.bytes_per_cycle * config.clock_mhz / 1000);
    report(config.name + "_random64_fraction_of_act_bound", m.bytes_per_cycle / bound);
    EXPECT_LE(m.bytes_per_cycle, bound + hits) << config.name;
    EXPECT_LT(stats.value("dram.row_hit_rate"), 0.01) << config.name;
  }
}

TEST(DramBandwidth, OpenVersusClosedPage) {
  DramConfig open = hbm2Config();
  DramConfig closed = hbm2Config();
  closed.page_policy = PagePolicy::kClosed;
  StatsRegistry s1, s2, s3, s4;
  const Measured stream_open = stream(open, 1 << 18, s1);
  const Measured stream_closed = stream(closed, 1 << 18, s2);
  const Measured random_open = random64(open, 50000, s3);
  const Measured random_closed = random64(closed, 50000, s4);
  report("hbm2_stream_open_efficiency", stream_open.efficiency);
  report("hbm2_stream_closed_efficiency", stream_closed.efficiency);
  report("hbm2_random64_open_efficiency", random_open.efficiency);
  report("hbm2_random64_closed_efficiency", random_closed.efficiency);
  // Closed page pays an ACT per burst on a stream, capped by tFAW at the random figure.
  EXPECT_GT(stream_open.efficiency, 2 * stream_closed.efficiency);
  // Random traffic gains no row hits from open page, and the PRE that open page
  // issues when the next request comes is hidden behind tRAS / tFAW as the
  // auto-precharge is: measured equal to 0.1% (23.93% each). Closed page is not
  // slower by more than 1%.
  EXPECT_GE(random_closed.efficiency, 0.99 * random_open.efficiency);
}

}  // namespace
}  // namespace tpusim
