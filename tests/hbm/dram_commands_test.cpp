// Exact command sequences from the scheduler (golden logs, worked by hand).
// HBM2: tRCD 14, tRP 14, tRAS 33, tRC 47, tCL 14, tCWL 4, burst 2, tRTP 5,
// tCCD_L 4, tRRD_S 4, tWTR_S 3, tRTW 14, tRFC 260, tREFI 3900. Addresses (all
// in pseudo-channel 0): 0 = bank 0 row 0, +2048 = next column, +512 = bank
// group 1 (bank 4), +4 x 65536 = row 1 of bank 0.
#include <gtest/gtest.h>

#include "sim/hbm/dram/dram_model.hpp"
#include "sim/hbm/dram/dram_presets.hpp"

namespace tpusim {
namespace {

struct Arrival {
  uint64_t address;
  bool is_write;
  uint64_t cycle;
};

// Runs the arrivals to completion; returns pseudo-channel 0's commands, one a line.
std::string commandsOf(const DramConfig& config, const std::vector<Arrival>& arrivals) {
  StatsRegistry stats;
  DramModel model(config, stats);
  std::vector<DramCommandRecord> log;
  model.setCommandLog(&log);
  uint64_t id = 0;
  for (const Arrival& a : arrivals) {
    model.advanceTo(a.cycle);
    model.enqueue(DramRequest{a.address, 32, a.is_write, a.cycle, id++});
  }
  while (!model.idle()) model.step();
  std::string text;
  for (const DramCommandRecord& r : log) {
    if (r.pseudo_channel == 0) text += formatCommand(r) + "\n";
  }
  return text;
}

TEST(DramCommands, MixedReadsWriteAndAConflict) {
  // A = RD b0 r0, B = RD b0 r0 (next column), C = WR b4 r0, D = RD b0 r1, all at 0.
  //   0  ACT b0 for A; C's ACT waits tRRD_S                 -> 4 ACT b4
  //  14  RD A (tRCD); B waits tCCD_L                        -> 18 RD B
  //      D may not close row 0 while B hits it
  //  32  WR C: RD B + tRTW = 32 (tRCD 18, bus 34 - tCWL = 30)
  //  33  PRE b0 for D: ACT + tRAS = 33 (RD B + tRTP = 23)
  //  47  ACT b0 r1: PRE + tRP = ACT + tRC = 47
  //  61  RD D (tRCD; WR C's data ends 38, + tWTR_S = 41)
  const std::string expected =
      "0 pc0 ACT b0 r0\n"
      "4 pc0 ACT b4 r0\n"
      "14 pc0 RD b0\n"
      "18 pc0 RD b0\n"
      "32 pc0 WR b4\n"
      "33 pc0 PRE b0\n"
      "47 pc0 ACT b0 r1\n"
      "61 pc0 RD b0\n";
  EXPECT_EQ(commandsOf(hbm2Config(), {{0, false, 0}, {2048, false, 0}, {512, true, 0}, {4 * 65536, false, 0}}),
            expected);
}

TEST(DramCommands, ClosedPageAutoPrecharges) {
  // A = RD b0 r0, B = RD b0 r0 (next column), at 0. RDA A at 14 closes the bank:
  // PRE at max(ACT + tRAS, RD + tRTP) = 33, so B's ACT at 33 + tRP = 47 = tRC, RDA at 61.
  DramConfig c = hbm2Config();
  c.page_policy = PagePolicy::kClosed;
  EXPECT_EQ(commandsOf(c, {{0, false, 0}, {2048, false, 0}}),
            "0 pc0 ACT b0 r0\n"
            "14 pc0 RDA b0\n"
            "47 pc0 ACT b0 r0\n"
            "61 pc0 RDA b0\n");
}

TEST(DramCommands, RefreshClosesOpenRowsFirst) {
  // A at 3800 leaves row 0 open. REF is due at 3900: PRE b0 at 3900 (ACT + tRAS =
  // 3833 passed), REF at 3900 + tRP = 3914. B, arriving at 3901 for the same row,
  // finds it closed and all banks blocked to 3914 + tRFC = 4174: ACT 4174, RD 4188.
  EXPECT_EQ(commandsOf(hbm2Config(), {{0, false, 3800}, {2048, false, 3901}}),
            "3800 pc0 ACT b0 r0\n"
            "3814 pc0 RD b0\n"
            "3900 pc0 PRE b0\n"
            "3914 pc0 REF\n"
            "4174 pc0 ACT b0 r0\n"
            "4188 pc0 RD b0\n");
}

}  // namespace
}  // namespace tpusim
