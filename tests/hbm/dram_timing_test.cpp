// Every timing gate of command_timer.hpp proven tight: a command is not
// issuable one cycle before its bound and is at the bound. HBM2 preset:
// tRCD 14, tRP 14, tRAS 33, tRC 47, tCL 14, tCWL 4, burst 2, tWR 15, tRTP 5,
// tCCD_S 2, tCCD_L 4, tRRD_S 4, tRRD_L 6, tFAW 30, tWTR_S 3, tWTR_L 8,
// tRTW 14 + 2 + 2 - 4 = 14, tRFC 260, tREFI 3900 cycles of 1000 MHz.
#include <gtest/gtest.h>

#include "sim/hbm/dram/command_timer.hpp"
#include "sim/hbm/dram/dram_presets.hpp"

namespace tpusim {
namespace {

using enum DramCommand;

// Banks: group g, bank b -> 4 g + b.
constexpr uint64_t kBank0 = 0, kSameGroup = 1, kOtherGroup = 4;

// Not issuable at t - 1, issuable at t.
void expectTight(const CommandTimer& timer, DramCommand command, uint64_t bank, uint64_t t) {
  EXPECT_EQ(timer.earliest(command, bank), t);
  EXPECT_FALSE(timer.canIssue(command, bank, t - 1));
  EXPECT_TRUE(timer.canIssue(command, bank, t));
}

class DramTiming : public ::testing::Test {
 protected:
  const DramConfig m_config = hbm2Config();
  CommandTimer m_timer{m_config};
  const uint64_t m_at = 1000;  // a start long past every initial constraint
};

TEST_F(DramTiming, PresetNumbers) {
  const tpusim::DramTiming& t = m_config.timing;
  EXPECT_EQ(t.tRCD, 14u);
  EXPECT_EQ(t.tRC, 47u);
  EXPECT_EQ(t.tFAW, 30u);
  EXPECT_EQ(t.tRTW, 14u);
  EXPECT_EQ(t.tRFC, 260u);
  EXPECT_EQ(t.tREFI, 3900u);
}

TEST_F(DramTiming, SameBankRowTimings) {
  m_timer.issue(kAct, kBank0, m_at, 5);
  EXPECT_FALSE(m_timer.canIssue(kAct, kBank0, m_at + 1000));  // the bank is open
  expectTight(m_timer, kRd, kBank0, m_at + 14);               // tRCD
  expectTight(m_timer, kWr, kBank0, m_at + 14);
  expectTight(m_timer, kPre, kBank0, m_at + 33);  // tRAS
  m_timer.issue(kPre, kBank0, m_at + 33);
  // tRC (47) and tRP after the PRE (33 + 14 = 47) coincide.
  expectTight(m_timer, kAct, kBank0, m_at + 47);
}

TEST_F(DramTiming, ReadToPrechargeAndWriteRecovery) {
  m_timer.issue(kAct, kBank0, m_at, 5);
  m_timer.issue(kRd, kBank0, m_at + 30);
  expectTight(m_timer, kPre, kBank0, m_at + 35);  // tRTP 5 after the RD, past tRAS (33)
  m_timer.issue(kWr, kBank0, m_at + 44);          // RD + tRTW (14)
  // WR + tCWL 4 + burst 2 + tWR 15 = 44 + 21
  expectTight(m_timer, kPre, kBank0, m_at + 65);
}

TEST_F(DramTiming, ActivateSpacingAcrossBanks) {
  m_timer.issue(kAct, kBank0, m_at, 1);
  expectTight(m_timer, kAct, kSameGroup, m_at + 6);   // tRRD_L
  expectTight(m_timer, kAct, kOtherGroup, m_at + 4);  // tRRD_S
}

TEST_F(DramTiming, FourActivateWindow) {
  // ACTs to four groups at 0, 4, 8, 12 (tRRD_S apart); the fifth waits for 0 + tFAW = 30.
  for (uint64_t i = 0; i < 4; ++i) m_timer.issue(kAct, 4 * i, m_at + 4 * i, 1);
  expectTight(m_timer, kAct, kSameGroup, m_at + 30);
  m_timer.issue(kAct, kSameGroup, m_at + 30, 1);
  // The sixth: the window's oldest is now the ACT at 4 -> 34.
  expectTight(m_timer, kAct, 4 + 1, m_at + 34);
}

TEST_F(DramTiming, ColumnToColumnAcrossBankGroups) {
  m_timer.issue(kAct, kBank0, m_at, 1);
  m_timer.issue(kAct, kSameGroup, m_at + 6, 1);
  m_timer.issue(kAct, kOtherGroup, m_at + 12, 1);
  const uint64_t rd = m_at + 30;
  m_timer.issue(kRd, kBank0, rd);
  expectTight(m_timer, kRd, kSameGroup, rd + 4);    // tCCD_L
  expectTight(m_timer, kRd, kOtherGroup, rd + 2);   // tCCD_S
  expectTight(m_timer, kWr, kOtherGroup, rd + 14);  // tRTW, any bank
}

TEST_F(DramTiming, WriteToReadTurnaround) {
  m_timer.issue(kAct, kBank0, m_at, 1);
  m_timer.issue(kAct, kOtherGroup, m_at + 4, 1);
  m_timer.issue(kAct, kSameGroup, m_at + 10, 1);
  const uint64_t wr = m_at + 30;
  m_timer.issue(kWr, kBank0, wr);
  // Data ends at wr + 4 + 2 = wr + 6; then tWTR_L 8 in the group, tWTR_S 3 elsewhere.
  expectTight(m_timer, kRd, kSameGroup, wr + 14);
  expectTight(m_timer, kRd, kOtherGroup, wr + 9);
  expectTight(m_timer, kWr, kSameGroup, wr + 4);  // tCCD_L
}

TEST_F(DramTiming, DataBusBurstsNeverOverlap) {
  // With no turnaround rule (tRTW 1) the data bus alone spaces RD and WR: the
  // RD's burst holds the bus over [rd + 14, rd + 16), and bursts take the bus in
  // command order, so the WR's data (tCWL 4 after it) starts at rd + 16: WR at rd + 12.
  DramConfig c = hbm2Config();
  c.timing.tRTW = 1;
  CommandTimer timer(c);
  timer.issue(kAct, kBank0, m_at, 1);
  timer.issue(kAct, kOtherGroup, m_at + 4, 1);
  const uint64_t rd = m_at + 30;
  timer.issue(kRd, kBank0, rd);
  expectTight(timer, kWr, kOtherGroup, rd + 12);
}

TEST_F(DramTiming, AutoPrechargeClosesTheBank) {
  m_timer.issue(kAct, kBank0, m_at, 1);
  m_timer.issue(kRd, kBank0, m_at + 14, kNoRow, true);
  EXPECT_EQ(m_timer.openRow(kBank0), kNoRow);
  // The implicit PRE waits for tRAS (33), not RD + tRTP (19): ACT at 33 + tRP 14 = 47.
  expectTight(m_timer, kAct, kBank0, m_at + 47);
}

TEST_F(DramTiming, RefreshNeedsClosedBanksAndBlocksThemForTrfc) {
  m_timer.issue(kAct, kBank0, m_at, 1);
  EXPECT_FALSE(m_timer.canIssue(kRef, 0, m_at + 10000));  // a bank is open
  m_timer.issue(kPre, kBank0, m_at + 33);
  expectTight(m_timer, kRef, 0, m_at + 47);  // the PRE's tRP (and the ACT's tRC)
  m_timer.issue(kRef, 0, m_at + 47);
  expectTight(m_timer, kAct, kOtherGroup, m_at + 47 + 260);
}

}  // namespace
}  // namespace tpusim
