// Translation symmetry of a slice's collective traffic (docs/interconnect.md, "Symmetry").
//
// Every dimension of a ring or torus slice wraps around, so moving every chip q places along
// dimension d maps the slice onto itself. When that translation also maps every link's
// latency (the links through optical circuit switches) and every collective's transfers onto
// themselves (each transfer has a translate with the same bytes, route and dependencies),
// every link of a class (the same coordinates mod q, dimension and direction) carries the
// same schedule at the same times, and so does every chip of a class. The network of the
// quotient slice, q_x x q_y x q_z chips whose links wrap where the slice's would leave the
// period, then reproduces the full simulation exactly: each of its transfers stands for its
// translates, takes the slice's route, and waits for the representatives of its
// dependencies. The tests hold the quotient's link and collective times to the full
// simulation's on every slice up to 8x8x8.
//
// Several slices joined by the DCN also move onto each other, one host to the next; there the
// slices themselves are simulated whole (a host's NIC carries all its chips' traffic, so no move
// within a slice preserves it) and the hosts reduce.
//
// Not symmetric, so simulated in full: the twisted torus (its wraparound shifts z), and any
// traffic or latency a translation does not preserve (rings over the chips in id order, groups
// that do not tile the period).
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sim/interconnect/network.hpp"
#include "sim/interconnect/transfer_plan.hpp"

namespace tpusim {

// The axes a slice can move along: x, y and z within each slice (wrapping), and the slices
// themselves (hosts, cyclically), as sizes, coordinates or periods.
constexpr int kAxes = 4;
using Axes = std::array<int, kAxes>;

// Why a slice cannot be reduced whatever its traffic ("" when it can be).
std::string symmetryObstacle(const Topology& topology);

// The smallest period per axis (dividing its size; the size itself where nothing smaller
// works) under which the links in `latency_links` (those with an extra latency, all the same)
// are invariant. The moves that preserve something are the multiples of its smallest one, so
// planPeriods takes the periods found so far as `base` and returns the smallest multiples of
// them that also preserve the plan's transfers. With several slices only the hosts' axis
// reduces (a host's NIC carries every chip of its slice). The slice must have no
// symmetryObstacle.
Axes latencyPeriods(const Topology& topology, std::span<const LinkId> latency_links);
Axes planPeriods(const Topology& topology, const TransferPlan& plan, const Axes& base);
// The axes' sizes: the periods under which nothing reduces.
Axes sizesOf(const Topology& topology);

// The slice of one period: period[d] chips along d, wrapping, and period[3] slices.
Topology quotientTopology(const Topology& topology, const Axes& period);
// The quotient's link, and host, standing for the slice's.
LinkId quotientLink(const Topology& topology, const Topology& quotient, LinkId link);
int quotientHost(const Topology& quotient, int host);

// A plan's representatives in the quotient: each keeps the slice's route.
class RoutedPlan {
 public:
  struct Record {
    ChipId src, dst;  // in the quotient
    HopPlan route;    // the slice's route within a slice
    bool dcn;         // between slices: over the DCN instead
    uint64_t bytes;
    uint64_t earliest_ps;
    uint32_t deps_begin, deps_end;
  };
  // Adds the transfers to `network` (built on the quotient) in order.
  void replay(Network& network) const;
  size_t size() const { return m_records.size(); }

 private:
  friend std::optional<RoutedPlan> reducePlan(const TransferPlan&, const Topology&, const Topology&);
  std::vector<Record> m_records;
  std::vector<uint32_t> m_deps;
};

// The representatives of a plan invariant under the quotient's periods (the chips whose
// coordinates are below them), with their dependencies mapped to representatives; nullopt
// when a dependency's representative would come after the transfer that waits for it.
std::optional<RoutedPlan> reducePlan(const TransferPlan& plan, const Topology& topology, const Topology& quotient);

}  // namespace tpusim
