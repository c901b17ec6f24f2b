// Minimal routing on the ICI topologies (docs/interconnect.md, "Routing").
//
// A route is a signed hop count per dimension (+3 = three hops in the +
// direction). Both routing modes use the same minimal hop counts; they differ
// only in the order the hops are taken:
// - dimension order: all x hops, then y, then z (deterministic, oblivious);
// - adaptive: at each hop, among the dimensions with hops left, the outgoing
//   link that is free soonest, ties to the lower dimension (the network picks;
//   see Network). Deterministic, and still minimal.
// On a ring of even size the two ways round a half-ring distance are equally
// short; the tie goes + from an even coordinate and - from an odd one, so
// uniform traffic loads both directions alike.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "sim/interconnect/topology.hpp"

namespace tpusim {

enum class RoutingMode { kDimensionOrder, kAdaptive };

// "dimension_order" or "adaptive"; anything else is a one-line error.
RoutingMode routingModeFromName(const std::string& name);

struct HopPlan {
  std::array<int, kDims> hops{};  // signed hops per dimension
  int total() const;
};

// The fewest hops from src to dst. On the twisted torus a wrapping x or y hop
// also moves z by k, so both ways round x and y are weighed with the z hops
// each then needs; hops commute (every hop is a translation), so the plan does
// not depend on the order the hops are taken in.
HopPlan minimalHops(const Topology& topology, ChipId src, ChipId dst);

// The route Network::addTransfer gives a transfer within a slice: the minimal hops, with
// `way` (+1 or -1, 0: none) picking the way round each dimension of size 2, where both
// links reach the same neighbour (not on the twisted torus, where a wrap also moves z).
HopPlan transferRoute(const Topology& topology, ChipId src, ChipId dst, int way);

// The directed links of the dimension-order route, first hop first.
std::vector<LinkId> dimensionOrderPath(const Topology& topology, ChipId src, ChipId dst);

}  // namespace tpusim
