#include "sim/hbm/dram/command_timer.hpp"

#include <algorithm>

namespace tpusim {

const char* commandName(DramCommand command) {
  switch (command) {
    case DramCommand::kAct: return "ACT";
    case DramCommand::kPre: return "PRE";
    case DramCommand::kRd: return "RD";
    case DramCommand::kWr: return "WR";
    case DramCommand::kRef: return "REF";
  }
  return "?";
}

CommandTimer::CommandTimer(const DramConfig& config)
    : m_t(config.timing),
      m_burst(burstCycles(config)),
      m_banks_per_group(config.banks_per_group),
      m_banks(banksPerPseudoChannel(config)),
      m_groups(config.bank_groups) {}

uint64_t CommandTimer::earliest(DramCommand command, uint64_t bank) const {
  const Bank& b = m_banks[bank];
  const Group& g = m_groups[bank / m_banks_per_group];
  switch (command) {
    case DramCommand::kAct: {
      uint64_t t = std::max({b.next_act, g.next_act, m_next_act});
      // The fifth ACT waits until the oldest of the last four is tFAW behind.
      if (m_act_count >= 4) t = std::max(t, m_recent_acts[m_act_count % 4] + m_t.tFAW);
      return t;
    }
    case DramCommand::kPre: return b.next_pre;
    case DramCommand::kRd: {
      const uint64_t bus = m_bus_free > m_t.tCL ? m_bus_free - m_t.tCL : 0;
      return std::max({b.next_rd, g.next_rd, m_next_rd, bus});
    }
    case DramCommand::kWr: {
      const uint64_t bus = m_bus_free > m_t.tCWL ? m_bus_free - m_t.tCWL : 0;
      return std::max({b.next_wr, g.next_wr, m_next_wr, bus});
    }
    case DramCommand::kRef: {
      uint64_t t = 0;
      for (const Bank& each : m_banks) t = std::max(t, each.next_act);
      return t;
    }
  }
  return 0;
}

bool CommandTimer::canIssue(DramCommand command, uint64_t bank, uint64_t cycle) const {
  if (earliest(command, bank) > cycle) return false;
  switch (command) {
    case DramCommand::kAct: return m_banks[bank].open_row == kNoRow;
    case DramCommand::kPre:
    case DramCommand::kRd:
    case DramCommand::kWr: return m_banks[bank].open_row != kNoRow;
    case DramCommand::kRef: return allClosed();
  }
  return false;
}

uint64_t CommandTimer::issue(DramCommand command, uint64_t bank, uint64_t cycle, int64_t row, bool auto_precharge) {
  Bank& b = m_banks[bank];
  Group& g = m_groups[bank / m_banks_per_group];
  auto later = [](uint64_t& slot, uint64_t value) { slot = std::max(slot, value); };
  auto precharge = [&](uint64_t at) {
    b.open_row = kNoRow;
    --m_open_banks;
    later(b.next_act, at + m_t.tRP);
  };
  switch (command) {
    case DramCommand::kAct:
      b.open_row = row;
      ++m_open_banks;
      later(b.next_rd, cycle + m_t.tRCD);
      later(b.next_wr, cycle + m_t.tRCD);
      later(b.next_pre, cycle + m_t.tRAS);
      later(b.next_act, cycle + m_t.tRC);
      later(g.next_act, cycle + m_t.tRRD_L);
      later(m_next_act, cycle + m_t.tRRD_S);
      m_recent_acts[m_act_count % 4] = cycle;
      ++m_act_count;
      return 0;
    case DramCommand::kPre: precharge(cycle); return 0;
    case DramCommand::kRd: {
      later(b.next_pre, cycle + m_t.tRTP);
      later(g.next_rd, cycle + m_t.tCCD_L);
      later(m_next_rd, cycle + m_t.tCCD_S);
      later(m_next_wr, cycle + m_t.tRTW);
      const uint64_t done = cycle + m_t.tCL + m_burst;
      m_bus_free = done;
      // RDA: the bank precharges itself once tRAS and tRTP allow.
      if (auto_precharge) precharge(b.next_pre);
      return done;
    }
    case DramCommand::kWr: {
      const uint64_t done = cycle + m_t.tCWL + m_burst;
      later(b.next_pre, done + m_t.tWR);
      later(g.next_wr, cycle + m_t.tCCD_L);
      later(m_next_wr, cycle + m_t.tCCD_S);
      later(g.next_rd, done + m_t.tWTR_L);
      later(m_next_rd, done + m_t.tWTR_S);
      m_bus_free = done;
      if (auto_precharge) precharge(b.next_pre);
      return done;
    }
    case DramCommand::kRef:
      for (Bank& each : m_banks) later(each.next_act, cycle + m_t.tRFC);
      return 0;
  }
  return 0;
}

}  // namespace tpusim
