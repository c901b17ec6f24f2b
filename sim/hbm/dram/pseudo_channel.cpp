#include "sim/hbm/dram/pseudo_channel.hpp"

#include <algorithm>
#include <limits>

namespace tpusim {

namespace {
constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
}

std::string formatCommand(const DramCommandRecord& r) {
  std::string text = std::to_string(r.cycle) + " pc" + std::to_string(r.pseudo_channel) + " " + commandName(r.command) +
                     (r.auto_precharge ? "A" : "");
  if (r.command != DramCommand::kRef) text += " b" + std::to_string(r.bank);
  if (r.command == DramCommand::kAct) text += " r" + std::to_string(r.row);
  return text;
}

PseudoChannel::PseudoChannel(const DramConfig& config, const DramCounters& counters, uint64_t index)
    : m_timer(config),
      m_counters(counters),
      m_closed_page(config.page_policy == PagePolicy::kClosed),
      m_depth(config.queue_depth),
      m_burst_bytes(burstBytes(config)),
      m_next_refresh(config.timing.tREFI),
      m_hit_epoch(banksPerPseudoChannel(config), 0),
      m_column_blocked(2 * banksPerPseudoChannel(config), 0),
      m_row_blocked(banksPerPseudoChannel(config), 0),
      m_index(index) {
  m_window.reserve(m_depth);
}

void PseudoChannel::push(const Entry& entry) {
  if (m_window.size() < m_depth) {
    m_window.push_back(entry);
  } else {
    m_backlog.push_back(entry);
  }
}

void PseudoChannel::runUntil(uint64_t until, std::vector<DramCompletion>& done) {
  while (m_now < until) {
    const uint64_t c = m_now;
    uint64_t next = m_next_refresh > c ? m_next_refresh : kNever;
    const size_t window = m_window.size();
    size_t arrived = 0;
    while (arrived < window && m_window[arrived].arrival <= c) ++arrived;
    if (arrived < window) next = std::min(next, m_window[arrived].arrival);

    bool issued = false;
    if (c >= m_next_refresh) {
      issued = issueRefreshStep(c, next);
    } else {
      const bool column = issueColumn(c, arrived, next, done);
      if (column) --arrived;
      const bool row = issueRow(c, arrived, next);
      issued = column || row;
    }
    // Nothing issued: every candidate is blocked until `next`, so skip to it.
    m_now = issued ? c + 1 : std::min(std::max(next, c + 1), until);
  }
}

bool PseudoChannel::issueColumn(uint64_t c, size_t arrived, uint64_t& next, std::vector<DramCompletion>& done) {
  ++m_epoch;
  size_t pick = arrived;
  for (size_t i = 0; i < arrived; ++i) {
    const Entry& e = m_window[i];
    if (m_timer.openRow(e.bank) != e.row) continue;
    m_hit_epoch[e.bank] = m_epoch;
    const size_t slot = 2 * e.bank + (e.is_write ? 1 : 0);
    if (pick != arrived || m_column_blocked[slot] == m_epoch) continue;
    const uint64_t t = m_timer.earliest(e.is_write ? DramCommand::kWr : DramCommand::kRd, e.bank);
    if (t <= c) {
      pick = i;
    } else {
      next = std::min(next, t);
      m_column_blocked[slot] = m_epoch;
    }
  }
  if (pick == arrived) return false;
  const Entry e = m_window[pick];
  const uint64_t finish =
      m_timer.issue(e.is_write ? DramCommand::kWr : DramCommand::kRd, e.bank, c, kNoRow, m_closed_page);
  record(c, e.is_write ? DramCommand::kWr : DramCommand::kRd, e.bank, kNoRow, m_closed_page);
  (e.is_write ? m_counters.writes : m_counters.reads)->add();
  if (m_closed_page) m_counters.precharges->add();
  m_counters.bytes->add(m_burst_bytes);
  m_counters.bus_busy_cycles->add(m_timer.burst());
  (e.cause == kHit ? m_counters.row_hits : e.cause == kMiss ? m_counters.row_misses : m_counters.row_conflicts)->add();
  done.push_back(DramCompletion{e.id, finish, e.is_write});
  m_window.erase(m_window.begin() + static_cast<std::ptrdiff_t>(pick));
  if (!m_backlog.empty()) {
    // The backlog's oldest arrived no earlier than the window's youngest: order holds.
    m_window.push_back(m_backlog.front());
    m_backlog.pop_front();
  }
  return true;
}

bool PseudoChannel::issueRow(uint64_t c, size_t arrived, uint64_t& next) {
  for (size_t i = 0; i < arrived; ++i) {
    Entry& e = m_window[i];
    if (m_row_blocked[e.bank] == m_epoch) continue;
    const int64_t open = m_timer.openRow(e.bank);
    DramCommand command;
    if (open == kNoRow) {
      command = DramCommand::kAct;
    } else if (open != e.row && m_hit_epoch[e.bank] != m_epoch) {
      command = DramCommand::kPre;
    } else {
      continue;
    }
    const uint64_t t = m_timer.earliest(command, e.bank);
    if (t > c) {
      next = std::min(next, t);
      m_row_blocked[e.bank] = m_epoch;
      continue;
    }
    m_timer.issue(command, e.bank, c, e.row);
    record(c, command, e.bank, command == DramCommand::kAct ? e.row : kNoRow);
    if (command == DramCommand::kAct) {
      m_counters.activates->add();
      if (e.cause == kHit) e.cause = kMiss;
    } else {
      m_counters.precharges->add();
      e.cause = kConflict;
    }
    return true;
  }
  return false;
}

bool PseudoChannel::issueRefreshStep(uint64_t c, uint64_t& next) {
  if (m_timer.allClosed()) {
    const uint64_t t = m_timer.earliest(DramCommand::kRef, 0);
    if (t > c) {
      next = std::min(next, t);
      return false;
    }
    m_timer.issue(DramCommand::kRef, 0, c);
    record(c, DramCommand::kRef, 0);
    m_counters.refreshes->add();
    m_next_refresh += m_timer.timing().tREFI;
    return true;
  }
  for (uint64_t bank = 0; bank < m_timer.bankCount(); ++bank) {
    if (m_timer.openRow(bank) == kNoRow) continue;
    const uint64_t t = m_timer.earliest(DramCommand::kPre, bank);
    if (t <= c) {
      m_timer.issue(DramCommand::kPre, bank, c);
      record(c, DramCommand::kPre, bank);
      m_counters.precharges->add();
      return true;
    }
    next = std::min(next, t);
  }
  return false;
}

}  // namespace tpusim
