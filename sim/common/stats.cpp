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

const char* unitKindName(UnitKind kind) {
  switch (kind) {
    case UnitKind::kSimulation: return "simulation";
    case UnitKind::kTensorCore: return "tensor_core";
    case UnitKind::kMxu: return "mxu";
    case UnitKind::kVpu: return "vpu";
    case UnitKind::kDma: return "dma";
    case UnitKind::kIci: return "ici";
    case UnitKind::kHbm: return "hbm";
    case UnitKind::kDram: return "dram";
    case UnitKind::kCmem: return "cmem";
    case UnitKind::kNetwork: return "network";
    case UnitKind::kHost: return "host";
    case UnitKind::kPcie: return "pcie";
    case UnitKind::kCheckpoint: return "checkpoint";
  }
  return "?";
}

void StatsRegistry::unit(const std::string& name, UnitKind kind) {
  if (!m_unit_kinds.emplace(name, kind).second) {
    throw Error(ErrorKind::kInternal, "unit '" + name + "' declared twice");
  }
  m_units.push_back(UnitRecord{name, kind});
}

std::optional<UnitKind> StatsRegistry::kindOf(const std::string& name) const {
  const auto it = m_unit_kinds.find(name);
  return it == m_unit_kinds.end() ? std::nullopt : std::optional(it->second);
}

const StatEntry* StatsRegistry::find(const std::string& name) const {
  auto it = m_index.find(name);
  return it == m_index.end() ? nullptr : &m_entries[it->second];
}

const StatEntry& StatsRegistry::at(const std::string& name) const {
  const StatEntry* entry = find(name);
  if (entry == nullptr) throw Error(ErrorKind::kInternal, "no stat named '" + name + "'");
  return *entry;
}

double StatsRegistry::value(const std::string& name) const {
  return at(name).value();
}

}  // namespace tpusim
