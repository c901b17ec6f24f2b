// FR-FCFS order of pseudo_channel.hpp on hand-worked cases (HBM2: tRCD 14,
// tRP 14, tRAS 33, tCL 14, tRTP 5, tCCD_L 4, burst 2). Addresses as in
// dram_latency_test: +2048 B is the next column of the same row and bank,
// +4 x 65536 B the next row of the same bank.
#include <gtest/gtest.h>

#include <map>

#include "sim/hbm/dram/dram_model.hpp"
#include "sim/hbm/dram/dram_presets.hpp"

namespace tpusim {
namespace {

constexpr uint64_t kSameRow = 2048, kOtherRow = 4 * 65536;

// Runs until idle; returns id -> completion cycle.
std::map<uint64_t, uint64_t> drain(DramModel& model) {
  std::map<uint64_t, uint64_t> done;
  while (!model.idle()) {
    for (const DramCompletion& c : model.step()) done[c.id] = c.done_cycle;
  }
  return done;
}

// Opens row 0 of bank 0 with a read at cycle 0 (done at 30) and runs to 1000.
void openRowZero(DramModel& model) {
  model.enqueue(DramRequest{0, 32, false, 0, 0});
  model.advanceTo(1000);
}

TEST(DramScheduler, ARowHitGoesBeforeAnOlderConflict) {
  StatsRegistry stats;
  DramModel model(hbm2Config(), stats);
  openRowZero(model);
  model.enqueue(DramRequest{kOtherRow, 32, false, 1000, 1});  // older, needs another row
  model.enqueue(DramRequest{kSameRow, 32, false, 1000, 2});   // younger, hits the open row
  const auto done = drain(model);
  // The hit's RD at 1000: done 1000 + 14 + 2 = 1016. The conflict's PRE waits for
  // the hit's RD + tRTP = 1005, ACT at 1005 + 14, RD at 1019 + 14 = 1033, done 1049.
  EXPECT_EQ(done.at(2), 1016u);
  EXPECT_EQ(done.at(1), 1049u);
}

TEST(DramScheduler, WithAWindowOfOneTheOldestGoesFirst) {
  DramConfig c = hbm2Config();
  c.queue_depth = 1;
  StatsRegistry stats;
  DramModel model(c, stats);
  openRowZero(model);
  model.enqueue(DramRequest{kOtherRow, 32, false, 1000, 1});
  model.enqueue(DramRequest{kSameRow, 32, false, 1000, 2});
  const auto done = drain(model);
  // The conflict alone is seen: PRE 1000, ACT 1014, RD 1028, done 1044. The
  // second then conflicts in turn: PRE at max(ACT + tRAS, RD + tRTP) = 1047,
  // ACT 1061, RD 1075, done 1091.
  EXPECT_EQ(done.at(1), 1044u);
  EXPECT_EQ(done.at(2), 1091u);
}

TEST(DramScheduler, AmongHitsTheOldestGoesFirst) {
  StatsRegistry stats;
  DramModel model(hbm2Config(), stats);
  openRowZero(model);
  model.enqueue(DramRequest{2 * kSameRow, 32, false, 1000, 1});
  model.enqueue(DramRequest{kSameRow, 32, false, 1000, 2});
  const auto done = drain(model);
  // Same bank group: RDs tCCD_L = 4 apart. 1000 + 16 = 1016, then 1004 + 16 = 1020.
  EXPECT_EQ(done.at(1), 1016u);
  EXPECT_EQ(done.at(2), 1020u);
}

TEST(DramScheduler, ARowWithQueuedHitsIsNotClosed) {
  // Two hits and a conflict in age order conflict, hit, hit: both hits go first
  // (the second at tCCD_L), and the PRE waits for the last one's tRTP.
  StatsRegistry stats;
  DramModel model(hbm2Config(), stats);
  openRowZero(model);
  model.enqueue(DramRequest{kOtherRow, 32, false, 1000, 1});
  model.enqueue(DramRequest{kSameRow, 32, false, 1000, 2});
  model.enqueue(DramRequest{2 * kSameRow, 32, false, 1000, 3});
  const auto done = drain(model);
  // Hits: RD 1000 and 1004 -> 1016, 1020. PRE 1004 + 5 = 1009, ACT 1023, RD 1037, done 1053.
  EXPECT_EQ(done.at(2), 1016u);
  EXPECT_EQ(done.at(3), 1020u);
  EXPECT_EQ(done.at(1), 1053u);
  EXPECT_EQ(stats.value("dram.row_hits"), 2);
  EXPECT_EQ(stats.value("dram.row_conflicts"), 1);
}

}  // namespace
}  // namespace tpusim
