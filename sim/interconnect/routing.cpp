#include "sim/interconnect/routing.hpp"

#include <cstdlib>

#include "sim/common/error.hpp"

namespace tpusim {

namespace {

// Signed hops the short way round a ring of `size` for an offset `delta` in
// [0, size), with the half-way tie decided by the parity of `from`.
int shortWay(int delta, int size, int from) {
  if (delta == 0) return 0;
  const int minus = size - delta;
  if (delta < minus) return delta;
  if (minus < delta) return -minus;
  return from % 2 == 0 ? delta : -minus;
}

struct Option {
  int hops;   // signed
  int shift;  // z shift taken on the way
};

}  // namespace

RoutingMode routingModeFromName(const std::string& name) {
  if (name == "dimension_order") return RoutingMode::kDimensionOrder;
  if (name == "adaptive") return RoutingMode::kAdaptive;
  throw Error(ErrorKind::kInvalidConfig, "unknown ICI routing '" + name + "' (dimension_order, adaptive)");
}

int HopPlan::total() const {
  return std::abs(hops[0]) + std::abs(hops[1]) + std::abs(hops[2]);
}

HopPlan minimalHops(const Topology& topology, ChipId src, ChipId dst) {
  if (topology.sliceOf(src) != topology.sliceOf(dst)) {
    throw Error(ErrorKind::kInternal, "ICI routing: no ICI route between two slices (they meet only over the DCN)");
  }
  const Coords s = topology.coords(src);
  const Coords t = topology.coords(dst);
  HopPlan plan;
  if (topology.kind() != TopologyKind::kTwistedTorus3d) {
    for (int d = 0; d < kDims; ++d) {
      const int size = topology.dim(d);
      plan.hops[d] = shortWay(((t[d] - s[d]) % size + size) % size, size, s[d]);
    }
    return plan;
  }
  // Twisted: each of x and y can go either way round; a way that wraps shifts z by k.
  const int k = topology.dim(0);
  const int z_size = topology.dim(2);
  std::array<std::vector<Option>, 2> options;
  for (int d = 0; d < 2; ++d) {
    const int delta = ((t[d] - s[d]) % k + k) % k;
    if (delta == 0) {
      options[d].push_back({0, 0});
      continue;
    }
    const Option plus{delta, s[d] + delta >= k ? k : 0};
    const Option minus{-(k - delta), s[d] - (k - delta) < 0 ? k : 0};
    // The preferred way first: it wins ties, with the same parity rule as shortWay.
    const bool plus_first = delta < k - delta || (delta == k - delta && s[d] % 2 == 0);
    options[d] = plus_first ? std::vector<Option>{plus, minus} : std::vector<Option>{minus, plus};
  }
  int best = -1;
  for (const Option& ox : options[0]) {
    for (const Option& oy : options[1]) {
      const int dz = (((t[2] - s[2] - ox.shift - oy.shift) % z_size) + 2 * z_size) % z_size;
      const int hz = shortWay(dz, z_size, s[2]);
      const int total = std::abs(ox.hops) + std::abs(oy.hops) + std::abs(hz);
      if (best < 0 || total < best) {
        best = total;
        plan.hops = {ox.hops, oy.hops, hz};
      }
    }
  }
  return plan;
}

HopPlan transferRoute(const Topology& topology, ChipId src, ChipId dst, int way) {
  HopPlan route = minimalHops(topology, src, dst);
  if (way != 0 && topology.kind() != TopologyKind::kTwistedTorus3d) {
    for (int d = 0; d < kDims; ++d) {
      if (topology.dim(d) == 2 && route.hops[d] != 0) route.hops[d] = way > 0 ? 1 : -1;
    }
  }
  return route;
}

std::vector<LinkId> dimensionOrderPath(const Topology& topology, ChipId src, ChipId dst) {
  const HopPlan plan = minimalHops(topology, src, dst);
  std::vector<LinkId> path;
  path.reserve(plan.total());
  ChipId at = src;
  for (int d = 0; d < kDims; ++d) {
    const int dir = plan.hops[d] > 0 ? 1 : -1;
    for (int h = 0; h < std::abs(plan.hops[d]); ++h) {
      path.push_back(Topology::linkId(at, d, dir));
      at = topology.neighbor(at, d, dir);
    }
  }
  if (at != dst) throw Error(ErrorKind::kInternal, "ICI routing: the route does not reach its destination");
  return path;
}

}  // namespace tpusim
