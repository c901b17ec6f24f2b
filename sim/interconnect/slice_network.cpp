#include "sim/interconnect/slice_network.hpp"

#include <utility>

#include "sim/common/error.hpp"
#include "sim/interconnect/replica_groups.hpp"
#include "sim/interconnect/transfer_plan.hpp"

namespace tpusim {

SliceNetwork::Choice SliceNetwork::choose(const Topology& slice, const SliceNetworkOptions& options,
                                          std::span<const CollectiveShape> shapes) {
  Choice full{slice, !options.symmetry ? "ici.symmetry is off" : symmetryObstacle(slice), {}};
  if (!full.full_reason.empty()) return full;
  const auto record = [&](const CollectiveShape& shape) {
    TransferPlan plan(slice, options.dcn.has_value());
    recordInto(plan, slice, shape);
    return plan;
  };
  // Each shape is reduced with the periods found so far, which only grow (to multiples); a
  // shape reduced before they grew is recorded and reduced again at the end.
  Axes period = latencyPeriods(slice, options.latency_links);
  std::map<Key, std::pair<Axes, std::optional<RoutedPlan>>> reduced_with;
  for (const CollectiveShape& shape : shapes) {
    if (period == sizesOf(slice)) break;
    if (reduced_with.count(shape.key()) != 0) continue;
    const TransferPlan plan = record(shape);
    period = planPeriods(slice, plan, period);
    if (period != sizesOf(slice)) {
      reduced_with.emplace(shape.key(), std::pair(period, reducePlan(plan, slice, quotientTopology(slice, period))));
    }
  }
  if (period == sizesOf(slice)) {
    full.full_reason = "no translation of the slice preserves its links and collectives";
    return full;
  }
  Choice reduced{quotientTopology(slice, period), "", {}};
  for (const CollectiveShape& shape : shapes) {
    if (reduced.plans.count(shape.key()) != 0) continue;
    auto& [used, routed] = reduced_with.at(shape.key());
    if (used != period) routed = reducePlan(record(shape), slice, reduced.topology);
    if (!routed) {
      full.full_reason = "a collective's representatives would wait on later ones";
      return full;
    }
    reduced.plans.emplace(shape.key(), std::move(*routed));
  }
  return reduced;
}

void SliceNetwork::recordInto(TransferSink& sink, const Topology& slice, const CollectiveShape& shape) {
  for (const Group& members : replicaGroups(slice, shape.replicas, shape.stride)) {
    allReduce(sink, members, shape.bytes, shape.algorithm, shape.element_bytes);
  }
}

SliceNetwork::SliceNetwork(const Topology& slice, const SliceNetworkOptions& options,
                           std::span<const CollectiveShape> shapes)
    : SliceNetwork(slice, options, choose(slice, options, shapes)) {}

SliceNetwork::SliceNetwork(const Topology& slice, const SliceNetworkOptions& options, Choice choice)
    : m_slice(slice),
      m_reduced(choice.full_reason.empty()),
      m_full_reason(std::move(choice.full_reason)),
      m_network(choice.topology, options.link, options.routing),
      m_plans(std::move(choice.plans)) {
  m_network.setRecycling(true);
  if (options.dcn) m_network.attachDcn(*options.dcn);
  if (options.latency_ps > 0) {
    for (const LinkId link : options.latency_links) {
      m_network.setExtraLatency(m_reduced ? quotientLink(slice, simulated(), link) : link, options.latency_ps);
    }
  }
}

GroupId SliceNetwork::start(const CollectiveShape& shape) {
  const GroupId group = m_network.openGroup();
  if (m_reduced) {
    const auto plan = m_plans.find(shape.key());
    if (plan == m_plans.end()) throw Error(ErrorKind::kInternal, "ICI symmetry: a collective the Program did not list");
    plan->second.replay(m_network);
  } else {
    recordInto(m_network, m_slice, shape);
  }
  m_network.closeGroup();
  return group;
}

const LinkStats& SliceNetwork::dcnLinkStats(int host, bool up) const {
  const int simulated_host = m_reduced ? quotientHost(simulated(), host) : host;
  return m_network.linkStats(up ? m_network.dcnUplink(simulated_host) : m_network.dcnDownlink(simulated_host));
}

const LinkStats& SliceNetwork::linkStats(LinkId link) const {
  return m_network.linkStats(m_reduced ? quotientLink(m_slice, simulated(), link) : link);
}

void SliceNetwork::registerTotals(StatsRegistry& registry, const std::string& prefix) const {
  if (!m_reduced) {
    m_network.registerTotals(registry, prefix);
    return;
  }
  std::vector<LinkStats> links(static_cast<size_t>(m_slice.numLinkSlots()));
  for (LinkId l = 0; l < m_slice.numLinkSlots(); ++l) {
    if (m_slice.linkExists(l)) links[static_cast<size_t>(l)] = linkStats(l);
  }
  std::optional<std::vector<LinkStats>> dcn_links;
  if (hasDcn()) {
    dcn_links.emplace();
    for (int host = 0; host < m_slice.slices(); ++host) {
      dcn_links->push_back(dcnLinkStats(host, true));
      dcn_links->push_back(dcnLinkStats(host, false));
    }
  }
  registerLinkTotals(registry, prefix, m_slice, links,
                     dcn_links ? std::optional<std::span<const LinkStats>>(*dcn_links) : std::nullopt, makespan());
}

}  // namespace tpusim
