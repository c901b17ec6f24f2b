// The stats registry (docs/architecture.md, decision 6).
//
// Components register counters once, at construction, each with a dotted
// name ("chip0.core0.mxu0.busy_cycles"), a unit and a one-line description,
// and keep the returned reference: incrementing it in a hot loop costs one
// add, no lookup. Derived figures (utilization) are formulas over counters,
// declared once with their own unit and description. Reports read only this.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tpusim {

class Counter {
 public:
  void add(uint64_t amount = 1) { m_value += amount; }
  uint64_t value() const { return m_value; }

 private:
  uint64_t m_value = 0;
};

struct StatEntry {
  std::string name;
  std::string unit;
  std::string description;
  bool is_formula = false;
  const Counter* counter = nullptr;
  std::function<double()> formula;

  double value() const { return is_formula ? formula() : static_cast<double>(counter->value()); }
};

class StatsRegistry {
 public:
  StatsRegistry() = default;
  StatsRegistry(const StatsRegistry&) = delete;
  StatsRegistry& operator=(const StatsRegistry&) = delete;

  // A second registration of the same name is an internal error.
  Counter& counter(const std::string& name, const std::string& unit, const std::string& description);
  void formula(const std::string& name, const std::string& unit, const std::string& description,
               std::function<double()> compute);

  // Entries in registration order, which is deterministic for a given setup.
  const std::vector<StatEntry>& entries() const { return m_entries; }
  const StatEntry* find(const std::string& name) const;
  // Value of a registered stat; an unknown name is an internal error.
  double value(const std::string& name) const;

 private:
  void reserveName(const std::string& name);

  std::deque<Counter> m_counters;  // deque: references stay valid as it grows
  std::vector<StatEntry> m_entries;
  std::map<std::string, size_t> m_index;
};

}  // namespace tpusim
