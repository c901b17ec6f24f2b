// The scoreboard of one chip: which Program instructions have retired.
// Units wait on its event until their next instruction's dependencies have
// all retired; every retirement notifies it.
#pragma once

#include <cstdint>
#include <vector>

#include <systemc>

#include "traces/program.pb.h"

namespace tpusim {

class Scoreboard {
 public:
  explicit Scoreboard(size_t instruction_count) : m_retired(instruction_count, false) {}

  bool ready(const program::Instruction& instruction) const {
    for (int i = 0; i < instruction.deps_size(); ++i) {
      if (!m_retired[instruction.deps(i)]) return false;
    }
    return true;
  }
  void retire(uint32_t id) {
    m_retired[id] = true;
    ++m_retired_count;
    m_retired_event.notify(sc_core::SC_ZERO_TIME);
  }
  const sc_core::sc_event& retiredEvent() const { return m_retired_event; }
  size_t retiredCount() const { return m_retired_count; }
  size_t size() const { return m_retired.size(); }

 private:
  std::vector<bool> m_retired;
  size_t m_retired_count = 0;
  sc_core::sc_event m_retired_event;
};

}  // namespace tpusim
