#include "sim/chip/pod.hpp"

#include <cmath>

#include "sim/chip/program_check.hpp"
#include "sim/common/error.hpp"

namespace tpusim {

namespace {

AllReduceAlgorithm algorithmOf(const program::Collective& collective) {
  switch (collective.algorithm()) {
    case program::TORUS: return AllReduceAlgorithm::kTorus;
    case program::BIDIRECTIONAL_RING: return AllReduceAlgorithm::kBidirectionalRing;
    case program::RING: return AllReduceAlgorithm::kRing;
    case program::HIERARCHICAL: return AllReduceAlgorithm::kHierarchical;
    default: break;
  }
  throw Error(ErrorKind::kInvalidInput, "collective with no algorithm");
}

CollectiveShape shapeOf(const program::Collective& collective) {
  return {collective.replicas(), collective.group_stride() < 1 ? 1 : collective.group_stride(), collective.bytes(),
          algorithmOf(collective), programDTypeBytes(collective.dtype())};
}

// Every collective the chip's Program starts, for the network's symmetry check.
std::vector<CollectiveShape> collectiveShapes(const program::ChipProgram& program) {
  std::vector<CollectiveShape> shapes;
  for (const program::Instruction& instruction : program.instructions()) {
    if (instruction.unit() == program::ICI) shapes.push_back(shapeOf(instruction.collective()));
  }
  return shapes;
}

SliceNetworkOptions networkOptions(const HardwareParams& hw, const Topology& topology, const OcsWiring& ocs,
                                   const OcsConfig& ocs_config) {
  SliceNetworkOptions options;
  options.link = iciLinkConfigOf(hw);
  options.routing = routingModeFromName(hw.config().ici().routing());
  if (topology.slices() > 1) options.dcn = dcnLinkConfigOf(hw);  // hosts joined by the DCN
  options.latency_ps = static_cast<uint64_t>(std::llround(ocs_config.insertion_latency_ns * 1e3));
  if (options.latency_ps > 0) options.latency_links = ocs.ocs_links;
  options.symmetry = hw.config().ici().symmetry() != "off";
  return options;
}

}  // namespace

Topology topologyOf(const program::Program& program) {
  if (program.replicas() <= 1) return Topology(TopologyKind::kRing, {1});
  const int hosts = program.hosts() < 1 ? 1 : static_cast<int>(program.hosts());
  return Topology::parse(topologyKindFromName(program.topology_kind()), program.topology_shape(), program.replicas(),
                         hosts);
}

Pod::Pod(sc_core::sc_module_name name, const HardwareParams& hw, const Topology& topology,
         const program::ChipProgram& program, UnitContext context)
    : sc_core::sc_module(name),
      m_ocs_config(ocsConfigOf(hw)),
      m_ocs(topology.numChips() > 1 ? wireSlice(topology, m_ocs_config) : OcsWiring{}),
      m_network(topology, networkOptions(hw, topology, m_ocs, m_ocs_config), collectiveShapes(program)),
      m_period_ps(context.clock->period().value()) {
  m_chip = std::make_unique<Chip>("chip0", hw.config(), program, context, topology.numChips() > 1 ? this : nullptr);
  SC_THREAD(drive);
}

void Pod::launch(const program::Instruction& instruction, IciUnit& unit) {
  const uint64_t now = nowPs();
  m_network.advanceTo(now);
  // By symmetry every group of the collective's shape starts it now (replica_groups.hpp).
  const GroupId group = m_network.start(shapeOf(instruction.collective()));
  if (static_cast<size_t>(group) != m_launched.size()) throw Error(ErrorKind::kInternal, "ICI: group ids out of order");
  m_launched.push_back({&instruction, &unit, now});
  m_wake.notify(sc_core::SC_ZERO_TIME);
}

void Pod::drive() {
  while (true) {
    const uint64_t now = nowPs();
    m_network.advanceTo(now);
    for (const GroupId group : m_network.takeFinishedGroups()) {
      const uint64_t done = m_network.groupDoneTime(group);
      m_collective_ps += done - m_launched[group].start_ps;
      m_retiring.push({roundUpToCycle(done), group});
    }
    while (!m_retiring.empty() && m_retiring.top().time_ps <= now) {
      const Launched& launched = m_launched[m_retiring.top().group];
      m_retiring.pop();
      launched.unit->complete(*launched.instruction);
    }
    // Collectives start only at clock edges (the ICI unit's), and a start first advances the
    // network to its time, so the network's events up to the next edge can wait for it: one
    // wake per cycle with traffic, not per event, and the same results.
    uint64_t next = m_network.nextEventTime();
    if (next != Network::kNever) next = roundUpToCycle(next);
    if (!m_retiring.empty()) next = std::min(next, m_retiring.top().time_ps);
    if (next == Network::kNever) {
      wait(m_wake);
    } else {
      wait(sc_core::sc_time::from_value(next - now), m_wake);
    }
  }
}

}  // namespace tpusim
