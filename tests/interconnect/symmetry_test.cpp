// The slice network simulated on its quotient by symmetry (sim/interconnect/symmetry.hpp)
// against the same collectives on every chip and link: identical collective finish times,
// per-link counters and totals, on every slice up to 8x8x8 and for every algorithm, with
// contention between overlapping collectives, credits, adaptive routing, OCS latency and
// hosts joined by the DCN.
// Also which slices and traffic reduce, and to what period.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/interconnect/ocs.hpp"
#include "sim/interconnect/slice_network.hpp"

namespace tpusim {
namespace {

IciLinkConfig testLinks(uint64_t buffer_bytes = 256 * 1024) {
  IciLinkConfig c;
  c.bandwidth_bytes_per_s = 100e9;
  c.link_latency_ns = 500;
  c.router_latency_ns = 100;
  c.packet_bytes = 4096;
  c.buffer_bytes = buffer_bytes;
  return c;
}

struct Launch {
  uint64_t at_ps;
  CollectiveShape shape;
};

struct Outcome {
  std::vector<uint64_t> done_ps;  // by group
  std::vector<LinkStats> links;   // by LinkId of the slice, then each host's NIC uplink and downlink
  uint64_t makespan_ps = 0;
  bool reduced = false;
  Coords simulated{};
  int simulated_hosts = 0;
};

Outcome run(const Topology& slice, SliceNetworkOptions options, const std::vector<Launch>& launches, bool symmetry) {
  options.symmetry = symmetry;
  std::vector<CollectiveShape> shapes;
  for (const Launch& launch : launches) shapes.push_back(launch.shape);
  SliceNetwork network(slice, options, shapes);
  Outcome out;
  for (const Launch& launch : launches) {
    network.advanceTo(launch.at_ps);
    EXPECT_EQ(network.start(launch.shape), static_cast<GroupId>(out.done_ps.size()));
    out.done_ps.push_back(0);
  }
  network.advanceTo(Network::kNever);
  for (size_t g = 0; g < out.done_ps.size(); ++g) out.done_ps[g] = network.groupDoneTime(static_cast<GroupId>(g));
  out.links.resize(static_cast<size_t>(slice.numLinkSlots()));
  for (LinkId l = 0; l < slice.numLinkSlots(); ++l) {
    if (slice.linkExists(l)) out.links[static_cast<size_t>(l)] = network.linkStats(l);
  }
  for (int host = 0; network.hasDcn() && host < slice.slices(); ++host) {
    out.links.push_back(network.dcnLinkStats(host, true));
    out.links.push_back(network.dcnLinkStats(host, false));
  }
  out.makespan_ps = network.makespan();
  out.reduced = network.reduced();
  out.simulated = network.simulated().dims();
  out.simulated_hosts = network.simulated().slices();
  return out;
}

// Runs the launches both ways and expects the same times; returns the reduced run.
Outcome expectSameAsFull(const Topology& slice, const SliceNetworkOptions& options, const std::vector<Launch>& launches,
                         const std::string& what) {
  const Outcome full = run(slice, options, launches, false);
  const Outcome reduced = run(slice, options, launches, true);
  EXPECT_FALSE(full.reduced);
  EXPECT_EQ(reduced.done_ps, full.done_ps) << what;
  EXPECT_EQ(reduced.makespan_ps, full.makespan_ps) << what;
  for (size_t l = 0; l < full.links.size(); ++l) {
    const LinkStats& a = reduced.links[l];
    const LinkStats& b = full.links[l];
    if (a.bytes != b.bytes || a.messages != b.messages || a.busy_ps != b.busy_ps || a.max_queue_ps != b.max_queue_ps ||
        a.stalled_ps != b.stalled_ps) {
      ADD_FAILURE() << what << ": link " << l << " differs";
      break;
    }
  }
  return reduced;
}

std::string shapeName(const Topology& slice) {
  return slice.shapeString();
}

CollectiveShape wholeSlice(const Topology& slice, uint64_t bytes, AllReduceAlgorithm algorithm) {
  return {slice.numChips(), 1, bytes, algorithm, 4};
}

// Two all-reduces of different sizes, the second started while the first is on the links,
// then a third after both: contention, and the padding of uneven buffers.
std::vector<Launch> overlapping(const Topology& slice, AllReduceAlgorithm algorithm) {
  return {{0, wholeSlice(slice, 1'000'003, algorithm)},
          {1'500'000, wholeSlice(slice, 65'536, algorithm)},
          {400'000'000, wholeSlice(slice, 8, algorithm)}};
}

std::vector<Topology> slicesUpTo8x8x8() {
  std::vector<Topology> slices;
  for (int z : {1, 2, 3, 4, 6, 8}) {
    for (int y : {1, 2, 3, 4, 6, 8}) {
      for (int x : {1, 2, 3, 4, 5, 6, 8}) {
        if (x * y * z < 2) continue;
        slices.emplace_back(TopologyKind::kTorus3d, std::vector<int>{x, y, z});
      }
    }
  }
  return slices;
}

TEST(IciSymmetry, TorusAllReduceOnEverySliceUpTo8x8x8MatchesTheFullNetwork) {
  SliceNetworkOptions options;
  options.link = testLinks();
  int reduced = 0;
  for (const Topology& slice : slicesUpTo8x8x8()) {
    const Outcome out =
        expectSameAsFull(slice, options, overlapping(slice, AllReduceAlgorithm::kTorus), shapeName(slice) + " torus");
    reduced += out.reduced ? 1 : 0;
    // Every dimension of size >= 4 with an even size reduces to a period of 2.
    for (int d = 0; d < kDims; ++d) {
      if (slice.dim(d) % 2 == 0 && slice.dim(d) >= 4) {
        EXPECT_EQ(out.simulated[d], 2) << shapeName(slice);
      }
    }
  }
  EXPECT_GT(reduced, 100);
}

TEST(IciSymmetry, RingAlgorithmsOnEverySliceUpTo64ChipsMatchTheFullNetwork) {
  SliceNetworkOptions options;
  options.link = testLinks();
  for (const Topology& slice : slicesUpTo8x8x8()) {
    if (slice.numChips() > 64) continue;
    for (AllReduceAlgorithm algorithm : {AllReduceAlgorithm::kRing, AllReduceAlgorithm::kBidirectionalRing}) {
      expectSameAsFull(slice, options, overlapping(slice, algorithm),
                       shapeName(slice) + " " + allReduceAlgorithmName(algorithm));
    }
  }
  // A ring in chip-id order is the slice's own ring only on a ring: it reduces there.
  const Topology ring(TopologyKind::kRing, {8});
  EXPECT_TRUE(expectSameAsFull(ring, options, overlapping(ring, AllReduceAlgorithm::kRing), "ring 8").reduced);
  const Topology torus(TopologyKind::kTorus3d, {4, 4, 2});
  EXPECT_FALSE(
      expectSameAsFull(torus, options, overlapping(torus, AllReduceAlgorithm::kBidirectionalRing), "4x4x2").reduced);
}

TEST(IciSymmetry, TensorAndDataParallelGroupsMatchTheFullNetwork) {
  SliceNetworkOptions options;
  options.link = testLinks();
  for (const Topology& slice : slicesUpTo8x8x8()) {
    for (int tp : {2, 4}) {
      if (slice.dim(0) % tp != 0) continue;
      const int64_t dp = slice.numChips() / tp;
      // The tensor-parallel groups' all-reduce, then the data-parallel one over them (stride tp).
      const std::vector<Launch> launches = {{0, {tp, 1, 300'001, AllReduceAlgorithm::kBidirectionalRing, 4}},
                                            {200'000, {tp, 1, 4096, AllReduceAlgorithm::kBidirectionalRing, 4}},
                                            {900'000, {dp, tp, 20'000, AllReduceAlgorithm::kBidirectionalRing, 2}}};
      expectSameAsFull(slice, options, launches, shapeName(slice) + " tp " + std::to_string(tp));
    }
  }
  // Tensor-parallel groups alone reduce along x to their own size.
  const Topology slice(TopologyKind::kTorus3d, {8, 4, 4});
  const Outcome out = expectSameAsFull(
      slice, options, {{0, {4, 1, 1 << 20, AllReduceAlgorithm::kBidirectionalRing, 4}}}, "8x4x4 tp groups");
  EXPECT_TRUE(out.reduced);
  EXPECT_EQ(out.simulated, (Coords{4, 2, 2}));
}

TEST(IciSymmetry, CreditsAdaptiveRoutingAndOcsLatencyMatchTheFullNetwork) {
  const Topology slice(TopologyKind::kTorus3d, {8, 8, 8});
  SliceNetworkOptions options;
  options.link = testLinks(2 * 4096);  // two packets of buffer: paced links, stalls
  expectSameAsFull(slice, options, overlapping(slice, AllReduceAlgorithm::kTorus), "credits");
  options.routing = RoutingMode::kAdaptive;
  expectSameAsFull(slice, options, overlapping(slice, AllReduceAlgorithm::kTorus), "adaptive");
  // Links leaving 4x4x4 cubes through an OCS: the period grows to the cube.
  OcsConfig ocs;
  ocs.cube_edge = 4;
  ocs.pod_cubes = 64;
  options.latency_links = wireSlice(slice, ocs).ocs_links;
  options.latency_ps = 35'000;
  const Outcome out = expectSameAsFull(slice, options, overlapping(slice, AllReduceAlgorithm::kTorus), "ocs");
  EXPECT_TRUE(out.reduced);
  EXPECT_EQ(out.simulated, (Coords{4, 4, 4}));
}

TEST(IciSymmetry, HostsJoinedByTheDcnReduceToOneHost) {
  SliceNetworkOptions options;
  options.link = testLinks();
  options.dcn = DcnLinkConfig{25e9, 10'000};
  for (const std::vector<int>& shape : {std::vector<int>{1, 1, 1}, {2, 2, 1}, {4, 2, 1}, {2, 2, 2}}) {
    for (int hosts : {2, 3, 4, 6}) {
      const Topology slice(TopologyKind::kTorus3d, shape, 0, hosts);
      const Outcome out = expectSameAsFull(slice, options, overlapping(slice, AllReduceAlgorithm::kHierarchical),
                                           shapeName(slice) + " x " + std::to_string(hosts) + " hosts");
      EXPECT_TRUE(out.reduced);
      EXPECT_EQ(out.simulated_hosts, 1);
      EXPECT_EQ(out.simulated, slice.dims());  // each host's chips share its NIC: the slice stays whole
    }
  }
}

TEST(IciSymmetry, AsymmetricSlicesAndTrafficRunInFull) {
  SliceNetworkOptions options;
  options.link = testLinks();
  // The twisted torus's wraparound moves z.
  const Topology twisted(TopologyKind::kTwistedTorus3d, {4, 4, 8});
  const Outcome out = run(twisted, options, overlapping(twisted, AllReduceAlgorithm::kTorus), true);
  EXPECT_FALSE(out.reduced);
  // Data-parallel groups of one chip in two, a ring in chip-id order: from (2, y) to (0, y + 1)
  // breaks the x and y translations, and z has no period below its size.
  const Topology slice(TopologyKind::kTorus3d, {4, 4, 2});
  SliceNetwork network(slice, options,
                       std::vector<CollectiveShape>{{16, 2, 1 << 20, AllReduceAlgorithm::kBidirectionalRing, 4}});
  EXPECT_FALSE(network.reduced());
  EXPECT_EQ(network.fullReason(), "no translation of the slice preserves its links and collectives");
  options.symmetry = false;
  EXPECT_EQ(SliceNetwork(slice, options, {}).fullReason(), "ici.symmetry is off");
  EXPECT_EQ(symmetryObstacle(twisted), "the twisted torus's wraparound shifts z");
}

}  // namespace
}  // namespace tpusim
