// All-bank refresh per pseudo-channel (pseudo_channel.hpp). HBM2: tREFI 3900,
// tRFC 260 cycles, 16 pseudo-channels; REF k is due at k x tREFI.
#include <gtest/gtest.h>

#include "sim/hbm/dram/dram_presets.hpp"
#include "tests/hbm/dram_driver.hpp"

namespace tpusim {

namespace {

TEST(DramRefresh, AnIdleDeviceRefreshesEveryTrefi) {
  StatsRegistry stats;
  DramModel model(hbm2Config(), stats);
  // Cycles 0 .. 40949 hold the REFs due at 3900 x 1 .. 10 = floor(40950 / 3900) = 10, per pseudo-channel.
  model.advanceTo(40950);
  EXPECT_EQ(stats.value("dram.refreshes"), 16 * 10);
  // The 11th is due at 42900: not issued at 42899, issued at 42900.
  model.advanceTo(42900);
  EXPECT_EQ(stats.value("dram.refreshes"), 16 * 10);
  model.advanceTo(42901);
  EXPECT_EQ(stats.value("dram.refreshes"), 16 * 11);
}

TEST(DramRefresh, ARequestArrivingDuringTrfcWaitsForIt) {
  StatsRegistry stats;
  DramModel model(hbm2Config(), stats);
  model.advanceTo(3901);  // REF at 3900 on every pseudo-channel
  ASSERT_EQ(stats.value("dram.refreshes"), 16);
  model.enqueue(DramRequest{0, 32, false, 3901, 7});
  // ACT waits for 3900 + tRFC = 4160; RD at 4160 + 14; data ends 14 + 2 later: 4190.
  EXPECT_TRUE(model.advanceTo(4189).empty());
  const auto done = model.advanceTo(4190);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].done_cycle, 4190u);
}

TEST(DramRefresh, UnderLoadTheCountStillFollowsTrefi) {
  // Streaming keeps rows open when each REF falls due, so each REF waits for
  // precharges (a few tens of cycles), never a whole tREFI: by a cycle half an
  // interval past k x tREFI exactly k REFs have issued on every pseudo-channel.
  StatsRegistry stats;
  DramModel model(hbm2Config(), stats);
  const uint64_t k = 20, end = k * 3900 + 1950;
  uint64_t next = 0;
  while (model.now() < end) {
    while (model.queued() < 1024)
      model.enqueue(DramRequest{(next++ * 32) % (4ull << 30), 32, false, model.now(), next});
    model.advanceTo(std::min(end, model.now() + 8));
  }
  EXPECT_EQ(stats.value("dram.refreshes"), 16.0 * k);
  EXPECT_GT(stats.value("dram.reads"), 0);
}

}  // namespace
}  // namespace tpusim
