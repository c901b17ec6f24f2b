// The pod: the chips of an ICI slice and the network between them.
//
// Data parallel by symmetry (docs/architecture.md, decision 4): every replica runs
// the same Program on its own batch, so one chip's compute timeline (chip 0, the
// one SystemC chip) stands for all of them. When chip 0 starts a collective, the
// same collective is started for every group of its shape at that time, and the
// network (sim/interconnect/slice_network.hpp) is simulated for every chip and link, or
// for one representative of each class when the slice and its collectives are symmetric,
// so collectives in flight at once contend for links. The pod's process drives the
// network incrementally: it advances it to the current time, waits until the clock
// edge at or after its next event (collectives start on edges) or a new collective,
// and retires each collective on chip 0's ICI unit at the first cycle after its
// last byte arrived.
#pragma once

#include <memory>
#include <queue>
#include <vector>

#include <systemc>

#include "sim/chip/chip.hpp"
#include "sim/chip/ici_unit.hpp"
#include "sim/common/params.hpp"
#include "sim/interconnect/collectives.hpp"
#include "sim/interconnect/ocs.hpp"
#include "sim/interconnect/slice_network.hpp"

namespace tpusim {

class Pod : public sc_core::sc_module, public CollectiveNetwork {
 public:
  SC_HAS_PROCESS(Pod);
  // `program` is chip 0's, validated; it and `hw` must outlive the run.
  Pod(sc_core::sc_module_name name, const HardwareParams& hw, const Topology& topology,
      const program::ChipProgram& program, UnitContext context);

  void launch(const program::Instruction& instruction, IciUnit& unit) override;

  const Chip& chip() const { return *m_chip; }
  const SliceNetwork& network() const { return m_network; }
  // The slice's cubes and its links through optical circuit switches (ici.ocs_*).
  const OcsConfig& ocsConfig() const { return m_ocs_config; }
  const OcsWiring& ocsWiring() const { return m_ocs; }
  // Collectives started, and the sum of their durations (launch to last byte), in ps.
  uint64_t collectives() const { return m_launched.size(); }
  uint64_t collectivePs() const { return m_collective_ps; }

 private:
  struct Launched {
    const program::Instruction* instruction;
    IciUnit* unit;
    uint64_t start_ps;
  };
  struct Retiring {
    uint64_t time_ps;
    GroupId group;
    bool operator>(const Retiring& o) const { return time_ps != o.time_ps ? time_ps > o.time_ps : group > o.group; }
  };

  void drive();
  uint64_t nowPs() const { return sc_core::sc_time_stamp().value(); }
  uint64_t roundUpToCycle(uint64_t ps) const { return (ps + m_period_ps - 1) / m_period_ps * m_period_ps; }

  OcsConfig m_ocs_config;
  OcsWiring m_ocs;
  SliceNetwork m_network;
  uint64_t m_period_ps;
  std::unique_ptr<Chip> m_chip;
  std::vector<Launched> m_launched;  // by group id
  std::priority_queue<Retiring, std::vector<Retiring>, std::greater<>> m_retiring;
  uint64_t m_collective_ps = 0;
  sc_core::sc_event m_wake;
};

// The slice a Program's replicas run on: its topology_kind and topology_shape, or
// one chip. A shape that does not match its kind or replica count is a one-line error.
Topology topologyOf(const program::Program& program);

}  // namespace tpusim
