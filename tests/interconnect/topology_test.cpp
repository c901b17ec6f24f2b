// ICI topologies and minimal routing: shapes, wiring, the twisted torus, and
// the routed hop counts against a breadth-first search of the link graph.
#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <iostream>

#include "sim/common/error.hpp"
#include "sim/interconnect/routing.hpp"

namespace tpusim {
namespace {

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Hop distance from src to every chip over the directed links.
std::vector<int> bfs(const Topology& topo, ChipId src) {
  std::vector<int> dist(topo.numChips(), -1);
  std::deque<ChipId> queue{src};
  dist[src] = 0;
  while (!queue.empty()) {
    const ChipId c = queue.front();
    queue.pop_front();
    for (int d = 0; d < kDims; ++d) {
      if (topo.dim(d) < 2) continue;
      for (int dir : {1, -1}) {
        const ChipId n = topo.neighbor(c, d, dir);
        if (dist[n] < 0) {
          dist[n] = dist[c] + 1;
          queue.push_back(n);
        }
      }
    }
  }
  return dist;
}

TEST(IciShape, ParsesDimensions) {
  EXPECT_EQ(parseShape("4x4x8"), (std::vector<int>{4, 4, 8}));
  EXPECT_EQ(parseShape("16"), (std::vector<int>{16}));
  EXPECT_EQ(Topology::parse(TopologyKind::kTorus2d, "2x3").numChips(), 6);
}

TEST(IciShape, BadSyntaxIsOneLineError) {
  for (const char* bad : {"", "4x", "x4", "4xx4", "abc", "4x4y4", "4x-1", "1x1x1x1"}) {
    const std::string message = errorOf([&] { parseShape(bad); });
    EXPECT_NE(message.find("ICI shape"), std::string::npos) << bad;
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
  EXPECT_EQ(errorOf([] { parseShape("4x0x4"); }), "ICI shape '4x0x4': every dimension must be at least 1");
}

TEST(IciShape, ChipCountMismatchIsOneLineError) {
  EXPECT_EQ(errorOf([] { Topology::parse(TopologyKind::kTorus3d, "4x4x4", 32); }),
            "ICI shape 4x4x4 has 64 chips, but the slice has 32");
  EXPECT_EQ(errorOf([] { Topology::parse(TopologyKind::kTorus3d, "4x4"); }),
            "ICI topology 3d_torus needs a shape of 3 dimension(s), got 2");
  EXPECT_EQ(errorOf([] { Topology::parse(TopologyKind::kTwistedTorus3d, "4x4x4"); }),
            "twisted 3D torus must be k x k x 2k with k >= 2, got 4x4x4");
  EXPECT_EQ(errorOf([] { topologyKindFromName("mesh"); }),
            "unknown ICI topology 'mesh' (ring, 2d_torus, 3d_torus, twisted_3d_torus)");
  EXPECT_NO_THROW(Topology::parse(TopologyKind::kTorus3d, "4x4x4", 64));
}

TEST(IciTopology, CoordinatesRoundTripAndLinksCount) {
  const Topology torus = Topology::parse(TopologyKind::kTorus3d, "2x3x4");
  for (ChipId c = 0; c < torus.numChips(); ++c) EXPECT_EQ(torus.chipAt(torus.coords(c)), c);
  EXPECT_EQ(torus.coords(23), (Coords{1, 2, 3}));
  // 24 chips x 3 dimensions x 2 directions.
  EXPECT_EQ(torus.numLinks(), 144);
  // A ring of 8: 8 chips x 2 directions; a 4x4 torus: 16 x 4.
  EXPECT_EQ(Topology::parse(TopologyKind::kRing, "8").numLinks(), 16);
  EXPECT_EQ(Topology::parse(TopologyKind::kTorus2d, "4x4").numLinks(), 64);
}

TEST(IciTopology, RegularTorusWrapsAround) {
  const Topology torus = Topology::parse(TopologyKind::kTorus3d, "4x4x4");
  const ChipId c = torus.chipAt({3, 0, 2});
  EXPECT_EQ(torus.neighbor(c, 0, 1), torus.chipAt({0, 0, 2}));
  EXPECT_EQ(torus.neighbor(c, 1, -1), torus.chipAt({3, 3, 2}));
  EXPECT_EQ(torus.neighbor(c, 2, 1), torus.chipAt({3, 0, 3}));
}

TEST(IciTopology, TwistedTorusShiftsZOnXAndYWraparound) {
  const Topology twisted = Topology::parse(TopologyKind::kTwistedTorus3d, "4x4x8");
  // k = 4: wrapping in x or y moves 4 along z (mod 8); inner links are regular.
  EXPECT_EQ(twisted.neighbor(twisted.chipAt({3, 1, 2}), 0, 1), twisted.chipAt({0, 1, 6}));
  EXPECT_EQ(twisted.neighbor(twisted.chipAt({0, 1, 6}), 0, -1), twisted.chipAt({3, 1, 2}));
  EXPECT_EQ(twisted.neighbor(twisted.chipAt({1, 0, 5}), 1, -1), twisted.chipAt({1, 3, 1}));
  EXPECT_EQ(twisted.neighbor(twisted.chipAt({1, 1, 5}), 0, 1), twisted.chipAt({2, 1, 5}));
  EXPECT_EQ(twisted.neighbor(twisted.chipAt({1, 1, 7}), 2, 1), twisted.chipAt({1, 1, 0}));
}

TEST(IciTopology, EveryLinkHasItsReverse) {
  for (const Topology& topo :
       {Topology::parse(TopologyKind::kRing, "5"), Topology::parse(TopologyKind::kTorus2d, "2x3"),
        Topology::parse(TopologyKind::kTorus3d, "3x2x4"), Topology::parse(TopologyKind::kTwistedTorus3d, "4x4x8")}) {
    for (LinkId l = 0; l < topo.numLinkSlots(); ++l) {
      if (!topo.linkExists(l)) continue;
      const LinkId back = Topology::linkId(topo.linkDest(l), topo.linkDim(l), -topo.linkDir(l));
      EXPECT_EQ(topo.linkDest(back), topo.linkSource(l)) << topo.linkName(l);
    }
  }
}

TEST(IciRouting, HalfRingTieAlternatesDirectionByParity) {
  const Topology ring = Topology::parse(TopologyKind::kRing, "8");
  EXPECT_EQ(minimalHops(ring, 0, 4).hops[0], 4);   // even source: +
  EXPECT_EQ(minimalHops(ring, 1, 5).hops[0], -4);  // odd source: -
  EXPECT_EQ(minimalHops(ring, 1, 7).hops[0], -2);
  EXPECT_EQ(dimensionOrderPath(ring, 6, 1),
            (std::vector<LinkId>{Topology::linkId(6, 0, 1), Topology::linkId(7, 0, 1), Topology::linkId(0, 0, 1)}));
}

TEST(IciRouting, MinimalHopsEqualBreadthFirstDistanceOnEveryTopology) {
  for (const Topology& topo :
       {Topology::parse(TopologyKind::kRing, "6"), Topology::parse(TopologyKind::kTorus2d, "4x3"),
        Topology::parse(TopologyKind::kTorus3d, "4x4x8"), Topology::parse(TopologyKind::kTwistedTorus3d, "2x2x4"),
        Topology::parse(TopologyKind::kTwistedTorus3d, "4x4x8")}) {
    for (ChipId s = 0; s < topo.numChips(); ++s) {
      const std::vector<int> dist = bfs(topo, s);
      for (ChipId t = 0; t < topo.numChips(); ++t) {
        ASSERT_EQ(minimalHops(topo, s, t).total(), dist[t]) << topo.shapeString() << " " << s << "->" << t;
        ASSERT_EQ(static_cast<int>(dimensionOrderPath(topo, s, t).size()), dist[t]);
      }
    }
  }
}

TEST(IciRouting, TwistShortensTheLongestRoute) {
  // Regular 4x4x8: diameter 2 + 2 + 4 = 8 hops. The twist lets x or y wraps
  // cover half of z, so no chip is more than 6 hops away; the mean falls too.
  const auto stats = [](const Topology& topo) {
    int diameter = 0;
    long sum = 0;
    const std::vector<int> dist = bfs(topo, 0);  // both are vertex-transitive
    for (int d : dist) {
      diameter = std::max(diameter, d);
      sum += d;
    }
    return std::pair<int, double>(diameter, static_cast<double>(sum) / topo.numChips());
  };
  const auto [regular_diameter, regular_mean] = stats(Topology::parse(TopologyKind::kTorus3d, "4x4x8"));
  const auto [twisted_diameter, twisted_mean] = stats(Topology::parse(TopologyKind::kTwistedTorus3d, "4x4x8"));
  EXPECT_EQ(regular_diameter, 8);
  EXPECT_LT(twisted_diameter, regular_diameter);
  EXPECT_LT(twisted_mean, regular_mean);
  std::cout << "4x4x8 diameter/mean hops: regular " << regular_diameter << "/" << regular_mean << ", twisted "
            << twisted_diameter << "/" << twisted_mean << "\n";
}

TEST(IciRouting, UnknownModeIsOneLineError) {
  EXPECT_EQ(errorOf([] { routingModeFromName("west_first"); }),
            "unknown ICI routing 'west_first' (dimension_order, adaptive)");
}

}  // namespace
}  // namespace tpusim
