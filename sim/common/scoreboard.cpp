#include "sim/common/scoreboard.hpp"

namespace tpusim {

Scoreboard::Scoreboard(const program::ChipProgram& program)
    : m_retired(static_cast<size_t>(program.instructions_size()), false) {
  m_dep_begin.reserve(m_retired.size() + 1);
  m_dep_begin.push_back(0);
  for (const program::Instruction& instruction : program.instructions()) {
    m_deps.insert(m_deps.end(), instruction.deps().begin(), instruction.deps().end());
    m_dep_begin.push_back(static_cast<uint32_t>(m_deps.size()));
  }
}

}  // namespace tpusim
