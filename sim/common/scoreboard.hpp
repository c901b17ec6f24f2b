// The scoreboard of one chip: which Program instructions have retired.
// Units wait on its event until their next instruction's dependencies have
// all retired; every retirement notifies it. Dependencies are copied out of
// the Program once, at set-up, into flat arrays that the run only indexes.
#pragma once

#include <cstdint>
#include <vector>

#include <systemc>

#include "traces/program.pb.h"

namespace tpusim {

class Scoreboard {
 public:
  explicit Scoreboard(const program::ChipProgram& program);

  bool ready(uint32_t id) const {
    for (uint32_t i = m_dep_begin[id]; i < m_dep_begin[id + 1]; ++i) {
      if (!m_retired[m_deps[i]]) return false;
    }
    return true;
  }
  void retire(uint32_t id) {
    m_retired[id] = true;
    ++m_retired_count;
    if (m_core_of[id] != kNoCore) ++m_retired_on_core[m_core_of[id]];
    m_retired_event.notify(sc_core::SC_ZERO_TIME);
  }
  const sc_core::sc_event& retiredEvent() const { return m_retired_event; }
  size_t retiredCount() const { return m_retired_count; }
  size_t size() const { return m_retired.size(); }
  // Instructions of `core` retired so far, ICI collectives aside (kernel boundaries wait on these).
  size_t retiredOnCore(uint32_t core) const { return m_retired_on_core[core]; }

 private:
  std::vector<uint32_t> m_dep_begin;  // instruction i's deps are m_deps[m_dep_begin[i] .. m_dep_begin[i + 1])
  std::vector<uint32_t> m_deps;
  static constexpr uint32_t kNoCore = UINT32_MAX;
  std::vector<bool> m_retired;
  std::vector<uint32_t> m_core_of;  // per instruction: its core, or kNoCore for ICI collectives
  std::vector<size_t> m_retired_on_core;
  size_t m_retired_count = 0;
  sc_core::sc_event m_retired_event;
};

}  // namespace tpusim
