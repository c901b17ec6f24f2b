#include "sim/interconnect/symmetry.hpp"

#include "sim/common/error.hpp"
#include "sim/interconnect/routing.hpp"

namespace tpusim {

namespace {

// A plan's records by source chip, in order: a translation maps the k-th transfer
// a chip sends to the k-th its translate sends.
struct PlanIndex {
  std::vector<uint32_t> begin;  // per chip, into order; size chips + 1
  std::vector<uint32_t> order;  // record indices grouped by source
  std::vector<uint32_t> local;  // per record: its position among its source's records

  PlanIndex(const TransferPlan& plan, int chips) : begin(static_cast<size_t>(chips) + 1, 0), local(plan.size()) {
    for (size_t i = 0; i < plan.size(); ++i) ++begin[static_cast<size_t>(plan.record(i).src) + 1];
    for (size_t c = 0; c < static_cast<size_t>(chips); ++c) begin[c + 1] += begin[c];
    order.resize(plan.size());
    std::vector<uint32_t> next(begin.begin(), begin.end() - 1);
    for (size_t i = 0; i < plan.size(); ++i) {
      const auto src = static_cast<size_t>(plan.record(i).src);
      local[i] = next[src] - begin[src];
      order[next[src]++] = static_cast<uint32_t>(i);
    }
  }
  uint32_t count(ChipId chip) const { return begin[chip + 1] - begin[chip]; }
  // The record `chip` sends in the position record `like` has at its own source.
  uint32_t at(ChipId chip, uint32_t like) const { return order[begin[chip] + local[like]]; }
};

ChipId shifted(const Topology& topology, ChipId chip, int d, int by) {
  Coords c = topology.coords(chip);
  c[d] = (c[d] + by) % topology.dim(d);
  return topology.chipAt(c);
}

// Where every chip goes when the slice moves `by` along d.
std::vector<ChipId> shiftTable(const Topology& topology, int d, int by) {
  std::vector<ChipId> to(static_cast<size_t>(topology.numChips()));
  for (ChipId c = 0; c < topology.numChips(); ++c) to[static_cast<size_t>(c)] = shifted(topology, c, d, by);
  return to;
}

ChipId representative(const Topology& topology, const Coords& period, ChipId chip) {
  Coords c = topology.coords(chip);
  for (int d = 0; d < kDims; ++d) c[d] %= period[d];
  return topology.chipAt(c);
}

bool planInvariant(const TransferPlan& plan, const PlanIndex& index, const std::vector<HopPlan>& routes,
                   const std::vector<ChipId>& shift) {
  for (size_t c = 0; c < shift.size(); ++c) {
    if (index.count(static_cast<ChipId>(c)) != index.count(shift[c])) return false;
  }
  for (size_t i = 0; i < plan.size(); ++i) {
    const TransferPlan::Record& r = plan.record(i);
    const uint32_t j = index.at(shift[static_cast<size_t>(r.src)], static_cast<uint32_t>(i));
    const TransferPlan::Record& t = plan.record(j);
    if (t.dst != shift[static_cast<size_t>(r.dst)] || t.bytes != r.bytes || t.earliest_ps != r.earliest_ps ||
        t.way != r.way || t.deps_end - t.deps_begin != r.deps_end - r.deps_begin || routes[i].hops != routes[j].hops) {
      return false;
    }
    const std::span<const TransferId> deps = plan.deps(r);
    const std::span<const TransferId> translated = plan.deps(t);
    for (size_t k = 0; k < deps.size(); ++k) {
      const auto dep = static_cast<uint32_t>(deps[k]);
      const uint32_t expected = index.at(shift[static_cast<size_t>(plan.record(dep).src)], dep);
      if (static_cast<uint32_t>(translated[k]) != expected) return false;
    }
  }
  return true;
}

bool latencyInvariant(const Topology& topology, const std::vector<bool>& has_latency, int d, int q) {
  for (LinkId l = 0; l < topology.numLinkSlots(); ++l) {
    if (!topology.linkExists(l)) continue;
    const LinkId moved =
        Topology::linkId(shifted(topology, topology.linkSource(l), d, q), topology.linkDim(l), topology.linkDir(l));
    if (has_latency[static_cast<size_t>(l)] != has_latency[static_cast<size_t>(moved)]) return false;
  }
  return true;
}

// Per dimension, the smallest multiple q >= 2 of base[d] that divides its size and has
// invariant(d, q), else the size.
template <typename Invariant>
Coords smallestPeriods(const Topology& topology, const Coords& base, Invariant invariant) {
  Coords period = topology.dims();
  for (int d = 0; d < kDims; ++d) {
    for (int q = base[d]; q < topology.dim(d); q += base[d]) {
      if (q >= 2 && topology.dim(d) % q == 0 && invariant(d, q)) {
        period[d] = q;
        break;
      }
    }
  }
  return period;
}

}  // namespace

std::string symmetryObstacle(const Topology& topology) {
  if (topology.kind() == TopologyKind::kTwistedTorus3d) return "the twisted torus's wraparound shifts z";
  if (topology.slices() > 1) return "the slices share their hosts' DCN links";
  return "";
}

Coords latencyPeriods(const Topology& topology, std::span<const LinkId> latency_links) {
  if (!symmetryObstacle(topology).empty()) throw Error(ErrorKind::kInternal, "symmetry of an asymmetric slice");
  std::vector<bool> has_latency(static_cast<size_t>(topology.numLinkSlots()), false);
  for (const LinkId l : latency_links) has_latency[static_cast<size_t>(l)] = true;
  return smallestPeriods(topology, Coords{1, 1, 1},
                         [&](int d, int q) { return latencyInvariant(topology, has_latency, d, q); });
}

Coords planPeriods(const Topology& topology, const TransferPlan& plan, const Coords& base) {
  if (!symmetryObstacle(topology).empty()) throw Error(ErrorKind::kInternal, "symmetry of an asymmetric slice");
  if (base == topology.dims()) return base;
  const PlanIndex index(plan, topology.numChips());
  std::vector<HopPlan> routes;
  routes.reserve(plan.size());
  for (size_t i = 0; i < plan.size(); ++i) {
    const TransferPlan::Record& r = plan.record(i);
    routes.push_back(transferRoute(topology, r.src, r.dst, r.way));
  }
  return smallestPeriods(topology, base,
                         [&](int d, int q) { return planInvariant(plan, index, routes, shiftTable(topology, d, q)); });
}

Topology quotientTopology(const Topology& topology, const Coords& period) {
  for (int d = 0; d < kDims; ++d) {
    if (period[d] < 1 || topology.dim(d) % period[d] != 0) {
      throw Error(ErrorKind::kInternal, "ICI symmetry: a period that does not divide the slice");
    }
  }
  // Every kind is held as three wrapping dimensions; the 3-D torus holds any of them.
  return Topology(TopologyKind::kTorus3d, {period[0], period[1], period[2]});
}

LinkId quotientLink(const Topology& topology, const Topology& quotient, LinkId link) {
  const ChipId representative_chip = representative(topology, quotient.dims(), topology.linkSource(link));
  return Topology::linkId(quotient.chipAt(topology.coords(representative_chip)), topology.linkDim(link),
                          topology.linkDir(link));
}

void RoutedPlan::replay(Network& network) const {
  std::vector<TransferId> ids;
  ids.reserve(m_records.size());
  std::vector<TransferId> deps;
  for (const Record& r : m_records) {
    deps.clear();
    for (uint32_t k = r.deps_begin; k < r.deps_end; ++k) deps.push_back(ids[m_deps[k]]);
    ids.push_back(network.addRoutedTransfer(r.src, r.dst, r.route, r.bytes, deps, r.earliest_ps));
  }
}

std::optional<RoutedPlan> reducePlan(const TransferPlan& plan, const Topology& topology, const Topology& quotient) {
  const Coords& period = quotient.dims();
  const PlanIndex index(plan, topology.numChips());
  constexpr uint32_t kNone = ~0u;
  std::vector<uint32_t> reduced(plan.size(), kNone);  // a representative's index in the reduced plan
  RoutedPlan out;
  for (size_t i = 0; i < plan.size(); ++i) {
    const TransferPlan::Record& r = plan.record(i);
    if (representative(topology, period, r.src) != r.src) continue;
    RoutedPlan::Record routed{quotient.chipAt(topology.coords(r.src)),
                              quotient.chipAt(topology.coords(representative(topology, period, r.dst))),
                              transferRoute(topology, r.src, r.dst, r.way),
                              r.bytes,
                              r.earliest_ps,
                              static_cast<uint32_t>(out.m_deps.size()),
                              0};
    for (const TransferId dep : plan.deps(r)) {
      const auto d = static_cast<uint32_t>(dep);
      const uint32_t rep = reduced[index.at(representative(topology, period, plan.record(d).src), d)];
      if (rep == kNone) return std::nullopt;  // not added yet
      out.m_deps.push_back(rep);
    }
    routed.deps_end = static_cast<uint32_t>(out.m_deps.size());
    reduced[i] = static_cast<uint32_t>(out.m_records.size());
    out.m_records.push_back(routed);
  }
  return out;
}

}  // namespace tpusim
