// The stats registry (docs/architecture.md, decision 6).
//
// Components register counters once, at construction, each with a dotted
// name ("chip0.core0.mxu0.busy_cycles"), a unit and a one-line description,
// and keep the returned reference: incrementing it in a hot loop costs one
// add, no lookup. Derived figures (utilization) are formulas over counters,
// declared once with their own unit and description. Reports read only this.
//
// Each component also declares itself once, by the prefix of its stats and its kind
// (UnitKind): the report finds its DMA engines, the DRAM behind the HBM and the CMEM by
// kind, not by which stats happen to exist or by the hardware config's strings.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
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

// What a component that registers stats is.
enum class UnitKind {
  kSimulation,  // the run itself: "sim" (total cycles)
  kTensorCore,  // a core's sequencer: "chip0.core0" (kernel launches and syncs)
  kMxu,         // "chip0.core0.mxu0"
  kVpu,         // "chip0.core0.vpu"
  kDma,         // "chip0.core0.dma0"
  kIci,         // a chip's ICI port, which runs its collectives: "chip0.ici"
  kHbm,         // "chip0.hbm"
  kDram,        // the DRAM model behind the HBM (hbm.model dram or dram_memoized): "chip0.hbm.dram"
  kCmem,        // "chip0.cmem"
  kNetwork,     // the slice's links and collectives: "ici"
  kHost,        // a host feeding the chip, with its input pipeline: "host0"
  kPcie,        // one direction of the host's PCIe link: "host0.pcie.infeed"
  kCheckpoint,  // "host0.checkpoint"
};
const char* unitKindName(UnitKind kind);

struct UnitRecord {
  std::string name;  // the prefix of its stats
  UnitKind kind;
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

  // Declares the component whose stats start with "<name>."; a second declaration of the
  // same name is an internal error.
  void unit(const std::string& name, UnitKind kind);
  // Units in declaration order.
  const std::vector<UnitRecord>& units() const { return m_units; }
  // The kind of the unit declared as `name`, or nullopt.
  std::optional<UnitKind> kindOf(const std::string& name) const;

  // Entries in registration order, which is deterministic for a given setup.
  const std::vector<StatEntry>& entries() const { return m_entries; }
  const StatEntry* find(const std::string& name) const;
  // A registered stat, and its value; an unknown name is an internal error, never 0.
  const StatEntry& at(const std::string& name) const;
  double value(const std::string& name) const;

 private:
  void reserveName(const std::string& name);

  std::deque<Counter> m_counters;  // deque: references stay valid as it grows
  std::vector<StatEntry> m_entries;
  std::map<std::string, size_t> m_index;
  std::vector<UnitRecord> m_units;
  std::map<std::string, UnitKind> m_unit_kinds;
};

}  // namespace tpusim
