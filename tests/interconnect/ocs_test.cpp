// Optical circuit switches (sim/interconnect/ocs.hpp): which cubes a slice takes, which
// links pass through an OCS, their insertion latency, and the one-line errors.
#include "sim/interconnect/ocs.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "sim/common/error.hpp"
#include "sim/interconnect/collectives.hpp"
#include "sim/interconnect/network.hpp"

namespace tpusim {
namespace {

OcsConfig v4Pod(std::vector<int> failed = {}) {
  OcsConfig c;
  c.cube_edge = 4;
  c.pod_cubes = 64;
  c.failed_cubes = std::move(failed);
  return c;
}

Topology torus(const std::string& shape) { return Topology::parse(TopologyKind::kTorus3d, shape); }

ErrorKind kindOf(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.kind();
  }
  return ErrorKind::kInternal;
}

TEST(Ocs, An8x8x8SliceTakesEightCubesAndItsFaceLinksGoThroughOcs) {
  const Topology slice = torus("8x8x8");
  const OcsWiring wiring = wireSlice(slice, v4Pod());
  ASSERT_TRUE(wiring.used);
  EXPECT_EQ(wiring.cubes, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  // Per line of 8 chips along a dimension: 3 -> 4 and 7 -> 0 going +, 4 -> 3 and 0 -> 7 going -.
  // 64 lines per dimension, 3 dimensions.
  EXPECT_EQ(wiring.ocs_links.size(), 4u * 64 * 3);
  for (const LinkId link : wiring.ocs_links) {
    const int at = slice.coords(slice.linkSource(link))[slice.linkDim(link)];
    EXPECT_EQ(at % 4, slice.linkDir(link) > 0 ? 3 : 0) << slice.linkName(link);
  }
}

TEST(Ocs, OneCubesWraparoundsGoThroughOcsAndASmallerSliceUsesNone) {
  const OcsWiring cube = wireSlice(torus("4x4x4"), v4Pod());
  EXPECT_EQ(cube.cubes, std::vector<int>{0});
  EXPECT_EQ(cube.ocs_links.size(), 2u * 16 * 3);  // the two wraparound directions of 16 lines, 3 dims
  EXPECT_FALSE(wireSlice(torus("2x2x2"), v4Pod()).used);
  OcsConfig none = v4Pod();
  none.cube_edge = 0;
  EXPECT_FALSE(wireSlice(torus("8x8x8"), none).used);
}

TEST(Ocs, FailedCubesAreRoutedAroundByTakingOthers) {
  const OcsWiring wiring = wireSlice(torus("4x4x8"), v4Pod({0, 2}));
  EXPECT_EQ(wiring.cubes, (std::vector<int>{1, 3}));
}

TEST(Ocs, InsertionLatencyAddsToALinkThroughTheSwitchOnly) {
  // A ring of 8 in two cubes of edge 4: 3 -> 4 crosses a face, 2 -> 3 does not.
  const Topology ring = Topology::parse(TopologyKind::kRing, "8");
  OcsConfig config = v4Pod();
  const OcsWiring wiring = wireSlice(ring, config);
  ASSERT_EQ(wiring.ocs_links.size(), 4u);
  IciLinkConfig link;
  link.bandwidth_bytes_per_s = 100e9;
  link.link_latency_ns = 500;
  link.packet_bytes = 4096;
  link.buffer_bytes = 256 * 1024;  // 64 packets, the presets' (assumed) buffer
  Network net(ring, link);
  for (const LinkId id : wiring.ocs_links) net.setExtraLatency(id, 250'000);  // 250 ns
  const TransferId inside = net.addTransfer(2, 3, 1000);
  const TransferId across = net.addTransfer(3, 4, 1000);
  net.run();
  // 1000 B x 10 ps + 500 ns; across a face 250 ns more.
  EXPECT_EQ(net.doneTime(inside), 10'000u + 500'000u);
  EXPECT_EQ(net.doneTime(across), 10'000u + 500'000u + 250'000u);
}

TEST(Ocs, SlicesThatCannotBeWiredAreOneLineErrors) {
  std::string message;
  EXPECT_EQ(kindOf([] { wireSlice(torus("6x4x4"), v4Pod()); }, &message), ErrorKind::kInvalidConfig);
  EXPECT_NE(message.find("multiple of it"), std::string::npos) << message;
  std::vector<int> failed;
  for (int cube = 0; cube < 60; ++cube) failed.push_back(cube);
  EXPECT_EQ(kindOf([&] { wireSlice(torus("8x8x8"), v4Pod(failed)); }, &message), ErrorKind::kInvalidConfig);
  EXPECT_EQ(message, "slice 8x8x8 needs 8 healthy cubes; the pod has 4 of 64 (ici.ocs_failed_cubes)");
  EXPECT_EQ(kindOf([] { wireSlice(torus("32x32x32"), v4Pod()); }, &message), ErrorKind::kInvalidConfig);
  EXPECT_EQ(message, "slice 32x32x32 needs 512 cubes; the pod has 64");
}

Topology twisted(const std::string& shape) { return Topology::parse(TopologyKind::kTwistedTorus3d, shape); }

TEST(Ocs, ATwistedSliceWiresItsTwistedWraparoundsThroughOcs) {
  // 4x4x8 twisted: two cubes along z (ids 0 and 1), as the regular 4x4x8. Through the OCS:
  // per x line of 4 the two wraparounds (3 -> 0 going +, 0 -> 3 going -), 32 lines, and as
  // many in y: 128 twisted wraparounds, each landing 4 chips along z, in the other cube; per
  // z line of 8 the four face links (3 -> 4, 7 -> 0, 4 -> 3, 0 -> 7), 16 lines: 64. 192 in all,
  // the same directed links as the regular slice's; only where the x and y ones land differs.
  const Topology slice = twisted("4x4x8");
  const OcsWiring wiring = wireSlice(slice, v4Pod());
  ASSERT_TRUE(wiring.used);
  EXPECT_EQ(wiring.cubes, (std::vector<int>{0, 1}));
  EXPECT_EQ(wiring.ocs_links.size(), 2u * 32 * 2 + 4u * 16);
  EXPECT_EQ(wiring.ocs_links, wireSlice(torus("4x4x8"), v4Pod()).ocs_links);
  int twisted_links = 0;
  for (const LinkId link : wiring.ocs_links) {
    const Coords from = slice.coords(slice.linkSource(link));
    const Coords to = slice.coords(slice.linkDest(link));
    const int d = slice.linkDim(link);
    if (d == 2) {
      EXPECT_NE(from[2] / 4, to[2] / 4) << slice.linkName(link);
      continue;
    }
    EXPECT_EQ(to[2], (from[2] + 4) % 8) << slice.linkName(link);  // the twist: half of z
    ++twisted_links;
  }
  EXPECT_EQ(twisted_links, 128);
  // An x link that does not wrap stays inside its cube, electrical: (0,0,0) -> (1,0,0).
  EXPECT_FALSE(std::binary_search(wiring.ocs_links.begin(), wiring.ocs_links.end(), Topology::linkId(0, 0, 1)));
  // 8x8x16: 2 x 2 x 4 = 16 cubes; per line 2n/4 directed links: 64 x-lines of 8 (4 each),
  // as many y, and 64 z-lines of 16 (8 each).
  const OcsWiring big = wireSlice(twisted("8x8x16"), v4Pod());
  EXPECT_EQ(big.cubes.size(), 16u);
  EXPECT_EQ(big.ocs_links.size(), 128u * 4 * 2 + 64u * 8);
}

TEST(Ocs, TwistedStaysFasterThanRegularOnAllToAllThroughTheSwitches) {
  // 4x4x8, 64 KiB from every chip to every other, dimension order, 500 ns more on every
  // link through an OCS: the twist still moves load off the z links and shortens routes.
  IciLinkConfig link;
  link.bandwidth_bytes_per_s = 100e9;
  link.link_latency_ns = 500;
  link.router_latency_ns = 100;
  link.packet_bytes = 4096;
  link.buffer_bytes = 256 * 1024;  // 64 packets, the presets' (assumed) buffer
  const auto run = [&](const Topology& slice) {
    Network net(slice, link);
    for (const LinkId id : wireSlice(slice, v4Pod()).ocs_links) net.setExtraLatency(id, 500'000);
    const Collective c = allToAll(net, allChips(slice), 128 * 64 * 1024);
    net.run();
    return c.finishTime(net);
  };
  const uint64_t regular = run(torus("4x4x8"));
  const uint64_t twist = run(twisted("4x4x8"));
  EXPECT_LT(twist, regular);
}

TEST(Ocs, TwistedSlicesThatCannotBeWiredAreOneLineErrors) {
  std::string message;
  // k = 2 < e: the twist's wraparounds would have to jump z inside one cube's fixed wiring.
  EXPECT_EQ(kindOf([] { wireSlice(twisted("2x2x4"), v4Pod()); }, &message), ErrorKind::kInvalidConfig);
  EXPECT_EQ(message, "twisted slice 2x2x4: k must be a multiple of the 4-chip cube edge to wire the twist through the OCS");
  EXPECT_EQ(kindOf([] { wireSlice(twisted("6x6x12"), v4Pod()); }, &message), ErrorKind::kInvalidConfig);
  EXPECT_NE(message.find("multiple of it"), std::string::npos) << message;
  EXPECT_EQ(kindOf([] { wireSlice(twisted("16x16x32"), v4Pod()); }, &message), ErrorKind::kInvalidConfig);
  EXPECT_EQ(message, "slice 16x16x32 needs 128 cubes; the pod has 64");
}

TEST(Ocs, FailedCubeListsAreChecked) {
  HardwareParams hw = HardwareParams::load("tpuv4");
  hw.set("ici.ocs_failed_cubes", "5,3,5");
  EXPECT_EQ(ocsConfigOf(hw).failed_cubes, (std::vector<int>{3, 5}));
  for (const char* bad : {"x", "64", "-1", "3,", "2.5"}) {
    HardwareParams h = HardwareParams::load("tpuv4");
    h.set("ici.ocs_failed_cubes", bad);
    std::string message;
    EXPECT_EQ(kindOf([&] { ocsConfigOf(h); }, &message), ErrorKind::kInvalidConfig) << bad;
    EXPECT_NE(message.find("is not a cube id in [0, 64)"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace tpusim
