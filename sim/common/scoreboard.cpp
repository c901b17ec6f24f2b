#include "sim/common/scoreboard.hpp"

namespace tpusim {

Scoreboard::Scoreboard(const program::ChipProgram& program)
    : m_retired(static_cast<size_t>(program.instructions_size()), false) {
  m_dep_begin.reserve(m_retired.size() + 1);
  m_dep_begin.push_back(0);
  m_core_of.reserve(m_retired.size());
  for (const program::Instruction& instruction : program.instructions()) {
    const bool counted = instruction.unit() != program::ICI;
    m_core_of.push_back(counted ? instruction.core() : kNoCore);
    if (counted && instruction.core() >= m_retired_on_core.size()) m_retired_on_core.resize(instruction.core() + 1, 0);
    m_deps.insert(m_deps.end(), instruction.deps().begin(), instruction.deps().end());
    m_dep_begin.push_back(static_cast<uint32_t>(m_deps.size()));
  }
}

}  // namespace tpusim
