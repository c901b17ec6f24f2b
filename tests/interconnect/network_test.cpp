// The ICI link model against its closed form: serialization, per-hop latency,
// packet pipelining over hops, FCFS sharing of a directed link, dependencies,
// adaptive routing, stats, and the one-line errors of bad link parameters.
#include <gtest/gtest.h>

#include <functional>

#include "sim/common/error.hpp"
#include "sim/interconnect/network.hpp"

namespace tpusim {
namespace {

// 100 GB/s = 10 ps per byte; alpha per hop = 500 ns link + 100 ns router.
IciLinkConfig testLinks() {
  IciLinkConfig c;
  c.bandwidth_bytes_per_s = 100e9;
  c.link_latency_ns = 500;
  c.router_latency_ns = 100;
  c.packet_bytes = 4096;  // 40,960 ps per packet
  c.buffer_bytes = 256 * 1024;  // 64 packets, the presets' (assumed) buffer
  return c;
}

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(IciNetwork, OneHopTakesAlphaPlusBytesOverBandwidth) {
  Network net(Topology::parse(TopologyKind::kRing, "4"), testLinks());
  const TransferId id = net.addTransfer(0, 1, 1'000'000);
  net.run();
  // 100 ns router + 1e6 B x 10 ps + 500 ns wire = 10,600,000 ps.
  EXPECT_EQ(net.doneTime(id), 10'600'000u);
  const LinkStats& s = net.linkStats(Topology::linkId(0, 0, 1));
  EXPECT_EQ(s.bytes, 1'000'000u);
  EXPECT_EQ(s.busy_ps, 10'000'000u);
  EXPECT_EQ(s.max_queue_ps, 0u);
}

TEST(IciNetwork, PacketsPipelineOverHops) {
  Network net(Topology::parse(TopologyKind::kRing, "8"), testLinks());
  const TransferId id = net.addTransfer(0, 3, 1'000'000);
  net.run();
  // 3 hops: 3 x 600 ns alpha + 2 x 40.96 ns (the head packet, store-and-forward
  // at each intermediate chip) + 10,000 ns for all bytes = 11,881.92 ns.
  EXPECT_EQ(net.doneTime(id), 3 * 600'000u + 2 * 40'960u + 10'000'000u);
  EXPECT_EQ(net.numHops(), 3u);
}

TEST(IciNetwork, MessageSmallerThanAPacketIsOnePacket) {
  Network net(Topology::parse(TopologyKind::kRing, "8"), testLinks());
  const TransferId id = net.addTransfer(0, 2, 100);
  net.run();
  // 2 x 600 ns + 2 x 1 ns (100 B each hop, whole message is the packet).
  EXPECT_EQ(net.doneTime(id), 2 * 600'000u + 2 * 1'000u);
}

TEST(IciNetwork, TwoMessagesShareALinkFirstComeFirstServed) {
  Network net(Topology::parse(TopologyKind::kRing, "4"), testLinks());
  const TransferId a = net.addTransfer(0, 1, 1'000'000);
  const TransferId b = net.addTransfer(0, 1, 1'000'000, {}, 1'000'000);  // its head is eligible 1 us later
  const TransferId c = net.addTransfer(0, 3, 1'000'000);                 // the other direction: no sharing
  net.run();
  EXPECT_EQ(net.doneTime(a), 10'600'000u);
  // b is eligible at 1.1 us, waits until 10.1 us, then 10 us of bytes + 0.5 us wire.
  EXPECT_EQ(net.doneTime(b), 20'600'000u);
  EXPECT_EQ(net.doneTime(c), 10'600'000u);
  EXPECT_EQ(net.linkStats(Topology::linkId(0, 0, 1)).max_queue_ps, 9'000'000u);
  EXPECT_EQ(net.makespan(), 20'600'000u);
}

TEST(IciNetwork, DependentTransferStartsWhenItsDependencyDelivers) {
  Network net(Topology::parse(TopologyKind::kRing, "4"), testLinks());
  const TransferId a = net.addTransfer(0, 1, 1'000'000);
  const TransferId deps[] = {a};
  const TransferId b = net.addTransfer(1, 2, 1'000'000, deps);
  net.run();
  EXPECT_EQ(net.doneTime(b), 2 * 10'600'000u);
}

TEST(IciNetwork, LocalTransferTakesNoTime) {
  Network net(Topology::parse(TopologyKind::kRing, "4"), testLinks());
  const TransferId a = net.addTransfer(2, 2, 1'000'000, {}, 5'000);
  net.run();
  EXPECT_EQ(net.doneTime(a), 5'000u);
  EXPECT_EQ(net.numHops(), 0u);
}

TEST(IciNetwork, AdaptiveRoutingAvoidsABusyLink) {
  // 4x4 torus. A long transfer holds chip0's x+ link; then chip0 -> chip5
  // (1 hop x, 1 hop y). Dimension order must wait for x+; adaptive goes y first.
  const Topology torus = Topology::parse(TopologyKind::kTorus2d, "4x4");
  uint64_t done[2];
  for (RoutingMode mode : {RoutingMode::kDimensionOrder, RoutingMode::kAdaptive}) {
    Network net(torus, testLinks(), mode);
    net.addTransfer(0, 1, 10'000'000);                      // x+ busy 0.1 .. 100.1 us
    const TransferId t = net.addTransfer(0, 5, 1'000'000);  // eligible at 0.1 us too
    net.run();
    done[mode == RoutingMode::kAdaptive] = net.doneTime(t);
  }
  // Dimension order: waits 100 us for x+, then 10 us + 0.5 + 0.1 (y hop head) ...
  EXPECT_EQ(done[0], 100'100'000u + 40'960u + 600'000u + 10'000'000u + 500'000u);
  // Adaptive: y+ at 0.1 us, then x+ at chip4 (free): 2 x 600 ns + 40.96 ns + 10 us.
  EXPECT_EQ(done[1], 2 * 600'000u + 40'960u + 10'000'000u);
}

TEST(IciNetwork, PacketModeMatchesMessageModeUncontended) {
  // 1,000,000 B = 244 packets of 4096 B + one of 576 B. Per packet the pipeline
  // over h hops gives h x 600 ns + (h - 1) x 40.96 ns + 10,000 ns, the message
  // mode's closed form, to the picosecond.
  const Topology ring = Topology::parse(TopologyKind::kRing, "8");
  for (ChipId dst = 1; dst <= 4; ++dst) {
    uint64_t done[2];
    for (Granularity g : {Granularity::kMessage, Granularity::kPacket}) {
      Network net(ring, testLinks(), RoutingMode::kDimensionOrder, g);
      const TransferId id = net.addTransfer(0, dst, 1'000'000);
      net.run();
      done[g == Granularity::kPacket] = net.doneTime(id);
      if (g == Granularity::kPacket) {
        EXPECT_EQ(net.numTransfers(), 246u);  // 245 packets + the join
      }
    }
    const uint64_t h = dst;
    EXPECT_EQ(done[0], h * 600'000 + (h - 1) * 40'960 + 10'000'000);
    EXPECT_EQ(done[1], done[0]) << h << " hops";
  }
}

TEST(IciNetwork, PacketModeInterleavesWhereMessageModeQueuesWholeMessages) {
  // 4x4 torus: A (0,1) -> (1,2) goes x+ then y+; B (1,0) -> (1,2) goes y+ twice.
  // Both heads reach chip (1,1) at the same time and need its y+ link. Message
  // mode: A (lower id) holds it for all 10 us, B waits: A ends ~10 us before B.
  // Packet mode: the packets alternate, and both end within one packet time of
  // each other. Either way the link carries 20 us of bytes: the last end agrees.
  const Topology torus = Topology::parse(TopologyKind::kTorus2d, "4x4");
  std::array<std::array<uint64_t, 2>, 2> done{};
  for (Granularity g : {Granularity::kMessage, Granularity::kPacket}) {
    Network net(torus, testLinks(), RoutingMode::kDimensionOrder, g);
    const TransferId a = net.addTransfer(torus.chipAt({0, 1, 0}), torus.chipAt({1, 2, 0}), 1'000'000);
    const TransferId b = net.addTransfer(torus.chipAt({1, 0, 0}), torus.chipAt({1, 2, 0}), 1'000'000);
    net.run();
    done[g == Granularity::kPacket] = {net.doneTime(a), net.doneTime(b)};
  }
  const double ser = 10'000'000;  // ps for 1e6 B
  EXPECT_NEAR(static_cast<double>(done[0][1] - done[0][0]), ser, 0.01 * ser);
  EXPECT_LE(std::abs(static_cast<int64_t>(done[1][1]) - static_cast<int64_t>(done[1][0])), 40'960);
  EXPECT_NEAR(static_cast<double>(done[1][1]), static_cast<double>(done[0][1]), 0.01 * static_cast<double>(done[0][1]));
}

TEST(IciNetwork, StatsAreRegisteredPerLinkWithTotals) {
  Network net(Topology::parse(TopologyKind::kRing, "4"), testLinks());
  net.addTransfer(0, 2, 1'000);  // 0 -> 1 -> 2: two hops (even source takes + on the tie)
  net.run();
  StatsRegistry stats;
  net.registerStats(stats, "ici");
  EXPECT_DOUBLE_EQ(stats.value("ici.chip0.x+.bytes"), 1000);
  EXPECT_DOUBLE_EQ(stats.value("ici.chip1.x+.busy_ps"), 10'000);
  EXPECT_DOUBLE_EQ(stats.value("ici.bytes"), 2000);
  EXPECT_EQ(stats.find("ici.chip3.x-.bytes"), nullptr);  // idle links are not listed
  // 2 x 10 ns busy over 8 links x makespan (2 x 600 + 2 x 10 ns = 1220 ns).
  EXPECT_DOUBLE_EQ(stats.value("ici.link_utilization"), 20'000.0 / (8 * 1'220'000.0));
}

TEST(IciLinkConfig, BuiltFromTheHardwareParameters) {
  HardwareParams v4 = HardwareParams::load("tpuv4");
  const IciLinkConfig link = iciLinkConfigOf(v4);
  EXPECT_DOUBLE_EQ(link.bandwidth_bytes_per_s, 50e9);  // 50 GB/s per direction (Jouppi et al. 2023)
  EXPECT_DOUBLE_EQ(link.link_latency_ns, 1000);
  EXPECT_DOUBLE_EQ(link.router_latency_ns, 0);
  EXPECT_EQ(link.packet_bytes, 4096u);
  EXPECT_DOUBLE_EQ(iciLinkConfigOf(HardwareParams::load("tpuv5p")).bandwidth_bytes_per_s, 100e9);
  v4.apply({{"ici.router_latency_ns", "40"}, {"ici.packet_bytes", "512"}});
  EXPECT_DOUBLE_EQ(iciLinkConfigOf(v4).router_latency_ns, 40);
  EXPECT_EQ(iciLinkConfigOf(v4).packet_bytes, 512u);
  EXPECT_NE(errorOf([&] { v4.set("ici.link_bandwidth_gbps", "0"); }).find("must be > 0"), std::string::npos);
}

TEST(IciNetwork, BadLinkParametersAreOneLineErrors) {
  const Topology ring = Topology::parse(TopologyKind::kRing, "4");
  IciLinkConfig zero = testLinks();
  zero.bandwidth_bytes_per_s = 0;
  EXPECT_EQ(errorOf([&] { Network(ring, zero); }), "ICI link bandwidth must be positive, got 0.000000 bytes/s");
  IciLinkConfig late = testLinks();
  late.router_latency_ns = -1;
  EXPECT_EQ(errorOf([&] { Network(ring, late); }), "ICI link and router latencies must be >= 0 ns");
  IciLinkConfig empty = testLinks();
  empty.packet_bytes = 0;
  EXPECT_EQ(errorOf([&] { Network(ring, empty); }), "ICI packet size must be at least 1 byte");
  Network net(ring, testLinks());
  EXPECT_EQ(errorOf([&] { net.addTransfer(0, 4, 1); }), "ICI transfer chip0 -> chip4: the topology has chips 0..3");
}

}  // namespace
}  // namespace tpusim
