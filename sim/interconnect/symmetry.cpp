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

Axes axesOf(const Topology& topology, ChipId chip) {
  const Coords c = topology.coords(chip);
  return {c[0], c[1], c[2], topology.sliceOf(chip)};
}

ChipId chipOf(const Topology& topology, const Axes& at) {
  return topology.chipAt({at[0], at[1], at[2]}, at[3]);
}

// Where every chip goes when the slice moves `by` along axis a.
std::vector<ChipId> shiftTable(const Topology& topology, int a, int by) {
  const Axes sizes = sizesOf(topology);
  std::vector<ChipId> to(static_cast<size_t>(topology.numChips()));
  for (ChipId c = 0; c < topology.numChips(); ++c) {
    Axes at = axesOf(topology, c);
    at[a] = (at[a] + by) % sizes[a];
    to[static_cast<size_t>(c)] = chipOf(topology, at);
  }
  return to;
}

ChipId representative(const Topology& topology, const Axes& period, ChipId chip) {
  Axes at = axesOf(topology, chip);
  for (int a = 0; a < kAxes; ++a) at[a] %= period[a];
  return chipOf(topology, at);
}

// A chip of the slice as the quotient's chip standing for it.
ChipId quotientChip(const Topology& topology, const Topology& quotient, ChipId chip) {
  return chipOf(quotient, [&] {
    Axes at = axesOf(topology, chip);
    const Axes period = sizesOf(quotient);
    for (int a = 0; a < kAxes; ++a) at[a] %= period[a];
    return at;
  }());
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

bool latencyInvariant(const Topology& topology, const std::vector<bool>& has_latency,
                      const std::vector<ChipId>& shift) {
  for (LinkId l = 0; l < topology.numLinkSlots(); ++l) {
    if (!topology.linkExists(l)) continue;
    const LinkId moved =
        Topology::linkId(shift[static_cast<size_t>(topology.linkSource(l))], topology.linkDim(l), topology.linkDir(l));
    if (has_latency[static_cast<size_t>(l)] != has_latency[static_cast<size_t>(moved)]) return false;
  }
  return true;
}

// Per axis, the smallest multiple q of base[a] that divides its size and has invariant(a, q),
// else the size. Along x, y and z, q >= 2 (a quotient ring of one chip would have no links),
// and only with one slice: every chip of a host shares its NIC, which no move within the
// slice maps to another. Along the hosts q >= 1: one host's NIC links stand for all.
template <typename Invariant>
Axes smallestPeriods(const Topology& topology, const Axes& base, Invariant invariant) {
  const Axes sizes = sizesOf(topology);
  Axes period = sizes;
  for (int a = 0; a < kAxes; ++a) {
    const bool host_axis = a == kAxes - 1;
    if (!host_axis && topology.slices() > 1) continue;
    for (int q = base[a]; q < sizes[a]; q += base[a]) {
      if ((host_axis || q >= 2) && sizes[a] % q == 0 && invariant(a, q)) {
        period[a] = q;
        break;
      }
    }
  }
  return period;
}

}  // namespace

Axes sizesOf(const Topology& topology) {
  return {topology.dim(0), topology.dim(1), topology.dim(2), topology.slices()};
}

std::string symmetryObstacle(const Topology& topology) {
  if (topology.kind() == TopologyKind::kTwistedTorus3d) return "the twisted torus's wraparound shifts z";
  return "";
}

Axes latencyPeriods(const Topology& topology, std::span<const LinkId> latency_links) {
  if (!symmetryObstacle(topology).empty()) throw Error(ErrorKind::kInternal, "symmetry of an asymmetric slice");
  std::vector<bool> has_latency(static_cast<size_t>(topology.numLinkSlots()), false);
  for (const LinkId l : latency_links) has_latency[static_cast<size_t>(l)] = true;
  return smallestPeriods(topology, Axes{1, 1, 1, 1}, [&](int a, int q) {
    return latencyInvariant(topology, has_latency, shiftTable(topology, a, q));
  });
}

Axes planPeriods(const Topology& topology, const TransferPlan& plan, const Axes& base) {
  if (!symmetryObstacle(topology).empty()) throw Error(ErrorKind::kInternal, "symmetry of an asymmetric slice");
  if (base == sizesOf(topology)) return base;
  const PlanIndex index(plan, topology.numChips());
  std::vector<HopPlan> routes;  // a transfer between slices (over the DCN) has none
  routes.reserve(plan.size());
  for (size_t i = 0; i < plan.size(); ++i) {
    const TransferPlan::Record& r = plan.record(i);
    routes.push_back(topology.sliceOf(r.src) == topology.sliceOf(r.dst) ? transferRoute(topology, r.src, r.dst, r.way)
                                                                        : HopPlan{});
  }
  return smallestPeriods(topology, base,
                         [&](int a, int q) { return planInvariant(plan, index, routes, shiftTable(topology, a, q)); });
}

Topology quotientTopology(const Topology& topology, const Axes& period) {
  const Axes sizes = sizesOf(topology);
  for (int a = 0; a < kAxes; ++a) {
    if (period[a] < 1 || sizes[a] % period[a] != 0) {
      throw Error(ErrorKind::kInternal, "ICI symmetry: a period that does not divide the slice");
    }
  }
  // Every kind is held as three wrapping dimensions; the 3-D torus holds any of them.
  return Topology(TopologyKind::kTorus3d, {period[0], period[1], period[2]}, 0, period[3]);
}

LinkId quotientLink(const Topology& topology, const Topology& quotient, LinkId link) {
  return Topology::linkId(quotientChip(topology, quotient, topology.linkSource(link)), topology.linkDim(link),
                          topology.linkDir(link));
}

int quotientHost(const Topology& quotient, int host) {
  return host % quotient.slices();
}

void RoutedPlan::replay(Network& network) const {
  std::vector<TransferId> ids;
  ids.reserve(m_records.size());
  std::vector<TransferId> deps;
  for (const Record& r : m_records) {
    deps.clear();
    for (uint32_t k = r.deps_begin; k < r.deps_end; ++k) deps.push_back(ids[m_deps[k]]);
    ids.push_back(network.addRoutedTransfer(r.src, r.dst, r.dcn ? nullptr : &r.route, r.bytes, deps, r.earliest_ps));
  }
}

std::optional<RoutedPlan> reducePlan(const TransferPlan& plan, const Topology& topology, const Topology& quotient) {
  const Axes period = sizesOf(quotient);
  const PlanIndex index(plan, topology.numChips());
  constexpr uint32_t kNone = ~0u;
  std::vector<uint32_t> reduced(plan.size(), kNone);  // a representative's index in the reduced plan
  RoutedPlan out;
  for (size_t i = 0; i < plan.size(); ++i) {
    const TransferPlan::Record& r = plan.record(i);
    if (representative(topology, period, r.src) != r.src) continue;
    const bool dcn = topology.sliceOf(r.src) != topology.sliceOf(r.dst);
    RoutedPlan::Record routed{quotientChip(topology, quotient, r.src),
                              quotientChip(topology, quotient, r.dst),
                              dcn ? HopPlan{} : transferRoute(topology, r.src, r.dst, r.way),
                              dcn,
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
