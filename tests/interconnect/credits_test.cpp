// Credit-based flow control against hand-computed closed forms: a flow whose
// buffer is smaller than bandwidth x credit round trip runs at buffer / RTT;
// a message blocked at a busy link fills the buffer in front of it and stalls
// the link behind it, over one and two hops; the fast message mode agrees
// with the packet-by-packet mode; bad buffer sizes; determinism.
#include <gtest/gtest.h>

#include <functional>
#include <iostream>

#include "sim/common/error.hpp"
#include "sim/common/params.hpp"
#include "sim/interconnect/collectives.hpp"
#include "sim/interconnect/network.hpp"

namespace tpusim {
namespace {

constexpr uint64_t kSer = 40'960;    // one 4096-byte packet at 100 GB/s (10 ps per byte)
constexpr uint64_t kWire = 500'000;  // link latency, and the credit's way back

// 100 GB/s, 500 ns per link, no router latency, `packets` 4096-byte packets per buffer.
IciLinkConfig links(uint64_t packets) {
  IciLinkConfig c;
  c.bandwidth_bytes_per_s = 100e9;
  c.link_latency_ns = 500;
  c.router_latency_ns = 0;
  c.packet_bytes = 4096;
  c.buffer_bytes = packets * 4096;
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

const Topology kRing8 = Topology::parse(TopologyKind::kRing, "8");

TEST(IciCredits, ASmallBufferLimitsAFlowToBufferOverRoundTrip) {
  // 100 packets over one link, 4 slots. A slot's round trip: the packet (40.96 ns),
  // the wire (500 ns), the credit back (500 ns): RTT = 1,040.96 ns > 4 x 40.96 ns,
  // so the sender sends 4 packets per RTT: packet j starts at floor(j/4) RTT + (j%4) ser,
  // 16,384 B / 1,040.96 ns = 15.7 GB/s instead of 100.
  const uint64_t rtt = kSer + 2 * kWire;
  const uint64_t expected = 24 * rtt + 3 * kSer + kSer + kWire;
  for (Granularity g : {Granularity::kMessage, Granularity::kPacket}) {
    Network net(kRing8, links(4), RoutingMode::kDimensionOrder, g);
    const TransferId id = net.addTransfer(0, 1, 100 * 4096);
    net.run();
    EXPECT_EQ(net.doneTime(id), expected) << (g == Granularity::kPacket ? "packet" : "message");
    const LinkStats& s = net.linkStats(Topology::linkId(0, 0, 1));
    EXPECT_EQ(s.busy_ps, 100 * kSer);
    EXPECT_EQ(s.stalled_ps, 24 * (rtt - 4 * kSer));  // idle between windows, waiting for credit
  }
  // In steady state 100 more packets take 25 more round trips: 4 packets per RTT.
  Network longer(kRing8, links(4));
  const TransferId id = longer.addTransfer(0, 1, 200 * 4096);
  longer.run();
  EXPECT_EQ(longer.doneTime(id) - expected, 25 * rtt);
}

TEST(IciCredits, ABufferAboveBandwidthTimesRoundTripCostsNothing) {
  // 26 slots x 40.96 ns = 1,064.96 ns >= RTT: the uncontended time of unbounded buffers,
  // over one hop and over three.
  for (ChipId dst : {1, 3}) {
    for (Granularity g : {Granularity::kMessage, Granularity::kPacket}) {
      Network net(kRing8, links(26), RoutingMode::kDimensionOrder, g);
      const TransferId id = net.addTransfer(0, dst, 100 * 4096);
      net.run();
      const uint64_t h = static_cast<uint64_t>(dst);
      EXPECT_EQ(net.doneTime(id), h * kWire + (h - 1) * kSer + 100 * kSer);
      EXPECT_EQ(net.linkStats(Topology::linkId(0, 0, 1)).stalled_ps, 0u);
    }
  }
}

// X: chip 0 -> 2 over 0x+ and 1x+; Y: chip 1 -> 2 over 1x+, from its source at time 0.
// 250 packets each, 32 slots (no pacing: 32 x 40.96 ns > RTT). Y holds 1x+ for
// ser = 10.24 us; X's head waits there, its packets fill chip 1's buffer (32),
// and 0x+ stalls. X's packet j >= 32 crosses 0x+ once packet j - 32 left chip 1
// (at 10.24 us + (j - 32) ser) and the credit came back (+500 ns):
//   release(0x+) = 10.24 us + 217 ser + 500 ns + ser = 19,669.28 ns,
//   stalled      = release - ser(B) = 9,429.28 ns.
TEST(IciCredits, AMessageBlockedAtAMergeStallsTheLinkBehindIt) {
  constexpr uint64_t kBytes = 250 * 4096;
  constexpr uint64_t kSerAll = 250 * kSer;  // 10.24 us
  for (Granularity g : {Granularity::kMessage, Granularity::kPacket}) {
    Network net(kRing8, links(32), RoutingMode::kDimensionOrder, g);
    const TransferId y = net.addTransfer(1, 2, kBytes);
    const TransferId x = net.addTransfer(0, 2, kBytes);
    net.run();
    const char* mode = g == Granularity::kPacket ? "packet" : "message";
    EXPECT_EQ(net.doneTime(y), kSerAll + kWire) << mode;
    EXPECT_EQ(net.doneTime(x), 2 * kSerAll + kWire) << mode;
    const LinkStats& behind = net.linkStats(Topology::linkId(0, 0, 1));
    EXPECT_EQ(behind.busy_ps, kSerAll) << mode;
    EXPECT_EQ(behind.stalled_ps, kSerAll + 217 * kSer + kWire + kSer - kSerAll) << mode;
    EXPECT_EQ(net.linkStats(Topology::linkId(1, 0, 1)).stalled_ps, 0u) << mode;
  }
  // With room for the whole message nothing stalls: X waits at chip 1 only.
  Network big(kRing8, links(250));
  big.addTransfer(1, 2, kBytes);
  const TransferId x = big.addTransfer(0, 2, kBytes);
  big.run();
  EXPECT_EQ(big.doneTime(x), 2 * kSerAll + kWire);
  EXPECT_EQ(big.linkStats(Topology::linkId(0, 0, 1)).stalled_ps, 0u);
}

// X: chip 0 -> 3 over 0x+, 1x+, 2x+; Y: chip 2 -> 3, holding 2x+ until F = 10.24 us.
// 1x+ stalls as above: its packet j >= 32 goes at F + 500 ns + (j - 32) ser. 0x+
// waits for slots in chip 1, freed as 1x+ takes packet j - 32, so its packet
// j >= 64 goes at F + 2 x 500 ns + (j - 64) ser:
//   release(1x+) = F + 500 ns + 218 ser = 19,669.28 ns (stalled 8,888.32 ns after its start at 540.96 ns)
//   release(0x+) = F + 1,000 ns + 186 ser = 18,858.56 ns (stalled 8,618.56 ns).
TEST(IciCredits, BackPressurePropagatesOverTwoHops) {
  constexpr uint64_t kBytes = 250 * 4096;
  constexpr uint64_t kSerAll = 250 * kSer;
  for (Granularity g : {Granularity::kMessage, Granularity::kPacket}) {
    Network net(kRing8, links(32), RoutingMode::kDimensionOrder, g);
    net.addTransfer(2, 3, kBytes);
    const TransferId x = net.addTransfer(0, 3, kBytes);
    net.run();
    const char* mode = g == Granularity::kPacket ? "packet" : "message";
    EXPECT_EQ(net.doneTime(x), 2 * kSerAll + kWire) << mode;
    EXPECT_EQ(net.linkStats(Topology::linkId(1, 0, 1)).stalled_ps, kSerAll + kWire + 218 * kSer - (kSer + kWire) - kSerAll)
        << mode;
    EXPECT_EQ(net.linkStats(Topology::linkId(0, 0, 1)).stalled_ps, kSerAll + 2 * kWire + 186 * kSer - kSerAll) << mode;
    StatsRegistry stats;
    net.registerStats(stats, "ici");
    EXPECT_DOUBLE_EQ(stats.value("ici.chip0.x+.stalled_ps"), static_cast<double>(2 * kWire + 186 * kSer));
    EXPECT_DOUBLE_EQ(stats.value("ici.stalled_ps"),
                     static_cast<double>(2 * kWire + 186 * kSer + kWire + 218 * kSer - kSer - kWire));
  }
}

TEST(IciCredits, MessageModeAgreesWithPacketModeOnRingAllReducesWithSmallBuffers) {
  // Two ring all-reduces at once on 8 chips, 2 MiB, 8-slot buffers (paced: 8 x 40.96 ns
  // < RTT). Neighbour transfers share the links; the makespans agree to the picosecond.
  uint64_t done[2];
  uint64_t stalled[2];
  for (Granularity g : {Granularity::kMessage, Granularity::kPacket}) {
    Network net(kRing8, links(8), RoutingMode::kDimensionOrder, g);
    const Collective a = allReduce(net, allChips(kRing8), 2 << 20, AllReduceAlgorithm::kRing);
    const Collective b = allReduce(net, allChips(kRing8), 2 << 20, AllReduceAlgorithm::kRing);
    net.run();
    done[g == Granularity::kPacket] = std::max(a.finishTime(net), b.finishTime(net));
    stalled[g == Granularity::kPacket] = net.linkStats(Topology::linkId(0, 0, 1)).stalled_ps;
  }
  std::cout << "two ring all-reduces, 8-slot buffers: message " << done[0] << " ps, packet " << done[1] << " ps\n";
  EXPECT_EQ(done[0], done[1]);  // 232,961,760 ps in both
  EXPECT_GT(stalled[0], 0u);
  EXPECT_GT(stalled[1], 0u);
}

TEST(IciCredits, MessageModeIsCloseToPacketModeOnAHotSpot) {
  // 4x4 torus, every chip sends 200 packets to chip 0 (dimension order), 16-slot
  // buffers: messages merge and block on the way in, no cycle. The message mode
  // grants whole messages where the packet mode interleaves them, so only the
  // totals compare: makespan 103.05 against 104.21 us, stalled 638.8 against 662.3 us.
  const Topology torus = Topology::parse(TopologyKind::kTorus2d, "4x4");
  double makespan[2], stalled[2];
  for (Granularity g : {Granularity::kMessage, Granularity::kPacket}) {
    Network net(torus, links(16), RoutingMode::kDimensionOrder, g);
    for (ChipId c = 1; c < 16; ++c) net.addTransfer(c, 0, 200 * 4096);
    net.run();
    uint64_t total = 0;
    for (LinkId l = 0; l < torus.numLinkSlots(); ++l) total += net.linkStats(l).stalled_ps;
    makespan[g == Granularity::kPacket] = static_cast<double>(net.makespan());
    stalled[g == Granularity::kPacket] = static_cast<double>(total);
  }
  EXPECT_NEAR(makespan[0], makespan[1], 0.02 * makespan[1]);
  EXPECT_NEAR(stalled[0], stalled[1], 0.05 * stalled[1]);
  EXPECT_GT(stalled[0], 0);
}

TEST(IciCredits, BadBufferSizesAreOneLineErrors) {
  IciLinkConfig none = links(1);
  none.buffer_bytes = 0;
  EXPECT_EQ(errorOf([&] { Network(kRing8, none); }),
            "ICI router input buffer of 0 bytes must hold at least one packet of 4096 bytes");
  IciLinkConfig small = links(1);
  small.buffer_bytes = 4095;
  EXPECT_EQ(errorOf([&] { Network(kRing8, small); }),
            "ICI router input buffer of 4095 bytes must hold at least one packet of 4096 bytes");
  HardwareParams v4 = HardwareParams::load("tpuv4");
  EXPECT_EQ(iciLinkConfigOf(v4).buffer_bytes, 256u * 1024);
  EXPECT_NE(errorOf([&] { v4.set("ici.buffer_bytes", "0"); }).find("must be > 0"), std::string::npos);
  v4.set("ici.buffer_bytes", "2048");  // in the schema's bounds, but under one packet
  EXPECT_EQ(errorOf([&] { iciLinkConfigOf(v4); }),
            "ICI router input buffer of 2048 bytes must hold at least one packet of 4096 bytes");
}

TEST(IciCredits, ContendedRunsAreDeterministic) {
  // All-to-all on a 5x5 torus with 8-slot buffers: messages block behind each other
  // (and the escape buffer breaks the cycles); two runs give the same stats.
  const Topology torus = Topology::parse(TopologyKind::kTorus2d, "5x5");
  std::vector<uint64_t> stalls[2];
  uint64_t makespan[2];
  for (int run = 0; run < 2; ++run) {
    Network net(torus, links(8));
    allToAll(net, allChips(torus), 25 * 256 * 1024);
    net.run();
    makespan[run] = net.makespan();
    for (LinkId l = 0; l < torus.numLinkSlots(); ++l) stalls[run].push_back(net.linkStats(l).stalled_ps);
  }
  EXPECT_EQ(makespan[0], makespan[1]);
  EXPECT_EQ(stalls[0], stalls[1]);
  uint64_t total = 0;
  for (uint64_t s : stalls[0]) total += s;
  EXPECT_GT(total, 0u);
}

}  // namespace
}  // namespace tpusim
