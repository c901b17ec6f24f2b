#include "sim/common/timeline.hpp"

namespace tpusim {

uint32_t Timeline::addUnit(const std::string& name) {
  m_units.push_back(name);
  return static_cast<uint32_t>(m_units.size() - 1);
}

}  // namespace tpusim
