// The controller of one pseudo-channel: a request queue scheduled FR-FCFS
// over a CommandTimer, with all-bank refresh.
//
// Each cycle it may issue one column command (RD/WR; HBM's column command bus)
// and one row command (ACT/PRE/REF; the separate row command bus):
//   column  the oldest queued request whose row is open and whose RD/WR is
//           ready (row hits first, then oldest); closed page makes it RDA/WRA
//   row     for the oldest request that can use one: ACT if its bank is closed,
//           PRE if another row is open and no queued request hits that row
// Only the first queue_depth requests (arrival order) are seen. A request is
// seen from its arrival cycle, with no controller latency.
//
// Refresh: all-bank REF per pseudo-channel, due every tREFI from cycle tREFI.
// Once due, no new RD/WR/ACT issue; open banks are precharged, REF issues when
// all are closed, and every bank is blocked tRFC. No postponing (JEDEC allows
// up to 8 REFs late; not modelled), so k REFs issue by cycle k x tREFI + drain.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "sim/common/stats.hpp"
#include "sim/hbm/dram/command_timer.hpp"

namespace tpusim {

// The model's counters, shared by its pseudo-channels.
struct DramCounters {
  Counter* reads;
  Counter* writes;
  Counter* activates;
  Counter* precharges;
  Counter* refreshes;
  Counter* row_hits;
  Counter* row_misses;
  Counter* row_conflicts;
  Counter* bytes;
  Counter* bus_busy_cycles;
};

struct DramCompletion {
  uint64_t id;
  uint64_t done_cycle;  // the cycle the last data beat ends
  bool is_write;
};

// One issued command, for a command log (tests, debugging).
struct DramCommandRecord {
  uint64_t cycle;
  uint64_t pseudo_channel;
  DramCommand command;
  uint64_t bank;        // REF: 0, covering all banks
  int64_t row;          // ACT: the row opened; otherwise kNoRow
  bool auto_precharge;  // RD/WR: issued as RDA/WRA
};

// "1000 pc3 ACT b4 r17", "1014 pc3 RDA b4".
std::string formatCommand(const DramCommandRecord& record);

class PseudoChannel {
 public:
  struct Entry {
    uint64_t id;
    uint64_t arrival;
    uint64_t bank;
    int64_t row;
    bool is_write;
    uint8_t cause;  // kHit, or the row command issued on its behalf
  };

  PseudoChannel(const DramConfig& config, const DramCounters& counters, uint64_t index);

  // Appends every command issued from now on to log (nullptr: none, the default).
  void setCommandLog(std::vector<DramCommandRecord>* log) { m_log = log; }

  void push(const Entry& entry);
  // Issue every command due at cycles before `until`, appending what they will complete to `done`.
  void runUntil(uint64_t until, std::vector<DramCompletion>& done);

  size_t queued() const { return m_window.size() + m_backlog.size(); }
  uint64_t now() const { return m_now; }
  const CommandTimer& timer() const { return m_timer; }

  static constexpr uint8_t kHit = 0, kMiss = 1, kConflict = 2;

 private:
  // Each returns whether it issued a command at cycle c and lowers `next` to
  // the earliest cycle a blocked candidate could issue.
  bool issueColumn(uint64_t c, size_t arrived, uint64_t& next, std::vector<DramCompletion>& done);
  bool issueRow(uint64_t c, size_t arrived, uint64_t& next);
  bool issueRefreshStep(uint64_t c, uint64_t& next);
  void record(uint64_t c, DramCommand command, uint64_t bank, int64_t row = kNoRow, bool auto_precharge = false) {
    if (m_log != nullptr) m_log->push_back(DramCommandRecord{c, m_index, command, bank, row, auto_precharge});
  }

  CommandTimer m_timer;
  DramCounters m_counters;
  bool m_closed_page;
  uint64_t m_depth;
  uint64_t m_burst_bytes;
  uint64_t m_next_refresh;
  // The first queue_depth requests in arrival order, contiguous for the scans
  // (reserved once), then the rest.
  std::vector<Entry> m_window;
  std::deque<Entry> m_backlog;
  // Per-bank marks stamped with the current scan's epoch (no lookup, no
  // clearing): a queued row hit; the RD (slot 2 x bank) or WR (2 x bank + 1)
  // found not ready; the row command found not ready. Requests to the same
  // bank need the same command, so a blocked bank is checked once per scan.
  std::vector<uint64_t> m_hit_epoch;
  std::vector<uint64_t> m_column_blocked;
  std::vector<uint64_t> m_row_blocked;
  uint64_t m_epoch = 0;
  uint64_t m_now = 0;
  uint64_t m_index;
  std::vector<DramCommandRecord>* m_log = nullptr;
};

}  // namespace tpusim
