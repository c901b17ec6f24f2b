// The timing rules of one pseudo-channel: its banks' states (closed or a row
// open) and, for every command, the earliest cycle it may issue. Issuing a
// command at cycle t pushes the earliest cycles of later commands out:
//   same bank      ACT->RD/WR tRCD, ACT->PRE tRAS, ACT->ACT tRC, PRE->ACT tRP,
//                  RD->PRE tRTP, WR->PRE tCWL + burst + tWR
//   bank groups    ACT->ACT tRRD_L (same group) / tRRD_S, at most 4 ACTs per tFAW,
//                  RD->RD and WR->WR tCCD_L (same group) / tCCD_S,
//                  WR->RD tCWL + burst + tWTR_L / tWTR_S, RD->WR tRTW
//   data bus       a RD's burst occupies [t + tCL, t + tCL + burst), a WR's
//                  [t + tCWL, t + tCWL + burst); bursts never overlap
//   refresh        REF needs every bank closed and past tRP; it blocks all banks tRFC
// Banks are numbered bank_group x banks_per_group + bank. No allocation after construction.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "sim/hbm/dram/dram_config.hpp"

namespace tpusim {

enum class DramCommand { kAct, kPre, kRd, kWr, kRef };

// "ACT", "PRE", "RD", "WR", "REF".
const char* commandName(DramCommand command);

inline constexpr int64_t kNoRow = -1;

class CommandTimer {
 public:
  explicit CommandTimer(const DramConfig& config);

  // Earliest cycle the command may issue to bank by timing alone (ACT ignores
  // which row; REF ignores the bank argument and covers all banks).
  uint64_t earliest(DramCommand command, uint64_t bank) const;
  // Timing and state together: ACT needs the bank closed, RD/WR and PRE an
  // open row, REF every bank closed.
  bool canIssue(DramCommand command, uint64_t bank, uint64_t cycle) const;

  // Record the command at cycle (the caller checked canIssue). row is the row
  // an ACT opens; auto_precharge closes the bank after a RD/WR (RDA/WRA).
  // Returns, for RD/WR, the cycle the burst's last beat ends.
  uint64_t issue(DramCommand command, uint64_t bank, uint64_t cycle, int64_t row = kNoRow, bool auto_precharge = false);

  int64_t openRow(uint64_t bank) const { return m_banks[bank].open_row; }
  bool allClosed() const { return m_open_banks == 0; }
  uint64_t bankCount() const { return m_banks.size(); }
  const DramTiming& timing() const { return m_t; }
  uint64_t burst() const { return m_burst; }

 private:
  struct Bank {
    int64_t open_row = kNoRow;
    uint64_t next_act = 0, next_pre = 0, next_rd = 0, next_wr = 0;
  };
  struct Group {
    uint64_t next_act = 0, next_rd = 0, next_wr = 0;
  };

  DramTiming m_t;
  uint64_t m_burst;
  uint64_t m_banks_per_group;
  std::vector<Bank> m_banks;
  std::vector<Group> m_groups;
  uint64_t m_open_banks = 0;
  // Pseudo-channel-wide earliest cycles (different-group spacings, turnaround).
  uint64_t m_next_act = 0, m_next_rd = 0, m_next_wr = 0;
  uint64_t m_bus_free = 0;  // first cycle the data bus is free
  // The last four ACT cycles (a ring), for tFAW; none yet = 0 with a count.
  std::array<uint64_t, 4> m_recent_acts{};
  uint64_t m_act_count = 0;
};

}  // namespace tpusim
