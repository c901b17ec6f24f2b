#include "sim/common/stats.hpp"

#include "sim/common/error.hpp"

namespace tpusim {

void StatsRegistry::reserveName(const std::string& name) {
  if (!m_index.emplace(name, m_entries.size()).second) {
    throw Error(ErrorKind::kInternal, "stat '" + name + "' registered twice");
  }
}

Counter& StatsRegistry::counter(const std::string& name, const std::string& unit, const std::string& description) {
  reserveName(name);
  Counter& counter = m_counters.emplace_back();
  m_entries.push_back(StatEntry{name, unit, description, false, &counter, {}});
  return counter;
}

void StatsRegistry::formula(const std::string& name, const std::string& unit, const std::string& description,
                            std::function<double()> compute) {
  reserveName(name);
  m_entries.push_back(StatEntry{name, unit, description, true, nullptr, std::move(compute)});
}

const StatEntry* StatsRegistry::find(const std::string& name) const {
  auto it = m_index.find(name);
  return it == m_index.end() ? nullptr : &m_entries[it->second];
}

double StatsRegistry::value(const std::string& name) const {
  const StatEntry* entry = find(name);
  if (entry == nullptr) throw Error(ErrorKind::kInternal, "no stat named '" + name + "'");
  return entry->value();
}

}  // namespace tpusim
