// The DCN between hosts (sim/interconnect/dcn.hpp) and the hierarchical
// all-reduce over it, against the closed forms of docs/interconnect.md ("DCN").
// ICI: beta = 100 GB/s (0.01 ns per byte), alpha = 600 ns per hop.
// DCN: B = 25 GB/s per NIC direction (0.04 ns per byte), L = 10 us one way,
// packets of 4096 B: P = ser(packet) = 4096 x 0.04 = 163.84 ns.
#include <gtest/gtest.h>

#include <functional>

#include "sim/common/error.hpp"
#include "sim/interconnect/collectives.hpp"

namespace tpusim {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr double kAlphaNs = 600;
constexpr double kIciNsPerByte = 0.01;
constexpr double kDcnNsPerByte = 0.04;
constexpr double kLatencyNs = 10'000;
constexpr double kPacketNs = 4096 * kDcnNsPerByte;

IciLinkConfig iciLinks() {
  IciLinkConfig c;
  c.bandwidth_bytes_per_s = 100e9;
  c.link_latency_ns = 500;
  c.router_latency_ns = 100;
  c.packet_bytes = 4096;
  c.buffer_bytes = 256 * 1024;  // 64 packets, the presets' (assumed) buffer
  return c;
}

DcnLinkConfig dcnLinks() {
  return DcnLinkConfig{25e9, kLatencyNs};
}

// `hosts` hosts of 2x2x1 chips (tpuv4's 4 chips per host), or of one chip.
Topology hostsOf(int hosts, bool one_chip = false) {
  return one_chip ? Topology(TopologyKind::kRing, {1}, 0, hosts) : Topology(TopologyKind::kTorus3d, {2, 2, 1}, 0, hosts);
}

Network dcnNetwork(const Topology& topo) {
  Network net(topo, iciLinks());
  net.attachDcn(dcnLinks());
  return net;
}

double ns(uint64_t ps) {
  return static_cast<double>(ps) / 1000.0;
}

void expectWithin1Percent(double simulated_ns, double closed_form_ns) {
  EXPECT_NEAR(simulated_ns, closed_form_ns, 0.01 * closed_form_ns)
      << "simulated " << simulated_ns << " ns vs closed form " << closed_form_ns << " ns";
}

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The DCN phase of the hierarchical all-reduce: c lanes per NIC (chips per host), each a
// ring over W hosts of 2(W-1) steps of b = n_s / W bytes (n_s: a chip's share after the
// ICI reduce-scatter). T = (c-1) b/B + (L + P + b/B) + (2(W-1) - 1) max(L + P + b/B, c b/B).
double dcnPhaseNs(double shared_bytes, int chips_per_host, int hosts) {
  const double b = shared_bytes / hosts * kDcnNsPerByte;
  const double step = kLatencyNs + kPacketNs + b;
  return (chips_per_host - 1) * b + step + (2.0 * (hosts - 1) - 1) * std::max(step, chips_per_host * b);
}

// The ICI phases on a 2x2x1 host: reduce-scatter along x (n) then y (n/2), then all-gather
// y, x. On a ring of 2 the bidirectional ring's directions take the two links to the
// neighbour, n_d / 4 each way: a phase is alpha + n_d / (4 beta), the torus form with p_d = 2.
double iciPhasesNs(double bytes) {
  return 2 * (kAlphaNs + bytes / 4 * kIciNsPerByte + kAlphaNs + bytes / 8 * kIciNsPerByte);
}

TEST(Dcn, ATransferBetweenHostsCrossesBothNics) {
  // 1 MiB chip 0 (host 0) -> chip 5 (host 1): L + P + 1,048,576 x 0.04 = 10,000 + 163.84 + 41,943.04.
  const Topology topo = hostsOf(2);
  Network net = dcnNetwork(topo);
  const TransferId id = net.addTransfer(0, 5, kMiB);
  net.run();
  EXPECT_EQ(net.doneTime(id), 52'106'880u);
  EXPECT_EQ(net.linkStats(net.dcnUplink(0)).bytes, kMiB);
  EXPECT_EQ(net.linkStats(net.dcnDownlink(1)).bytes, kMiB);
  EXPECT_EQ(net.linkStats(net.dcnUplink(1)).bytes, 0u);
  // A transfer inside a host stays on the ICI: one hop, alpha + 1 MiB x 0.01.
  Network ici = dcnNetwork(topo);
  const TransferId local = ici.addTransfer(4, 5, kMiB);
  ici.run();
  EXPECT_EQ(ici.doneTime(local), 11'085'760u);
  EXPECT_EQ(ici.linkStats(ici.dcnUplink(1)).messages, 0u);
}

TEST(Dcn, TransfersIntoOneHostShareItsDownlink) {
  // Hosts 0 and 1 each send 1 MiB to host 2 at once: the uplinks run in parallel and the
  // downlink serializes the second behind the first: L + P + 2 x 41,943.04 ns.
  const Topology topo = hostsOf(3, true);
  Network net = dcnNetwork(topo);
  const TransferId a = net.addTransfer(0, 2, kMiB);
  const TransferId b = net.addTransfer(1, 2, kMiB);
  net.run();
  EXPECT_EQ(net.doneTime(a), 52'106'880u);
  EXPECT_EQ(net.doneTime(b), 52'106'880u + 41'943'040u);
  EXPECT_EQ(net.linkStats(net.dcnDownlink(2)).bytes, 2 * kMiB);
  // Both heads reach the switch at L + P; the second waits the first's whole 1 MiB.
  EXPECT_EQ(net.linkStats(net.dcnDownlink(2)).max_queue_ps, 41'943'040u);
  StatsRegistry stats;
  net.registerStats(stats, "ici");
  EXPECT_EQ(stats.value("ici.host2.dcn_down.bytes"), 2.0 * kMiB);
  EXPECT_EQ(stats.value("ici.host0.dcn_up.bytes"), 1.0 * kMiB);
  EXPECT_EQ(stats.value("ici.dcn.bytes"), 4.0 * kMiB);
}

TEST(Dcn, HierarchicalAllReduceMatchesTheClosedFormWhenBandwidthBound) {
  // 4 hosts of 2x2x1, n = 16 MiB: n_s = 4 MiB per chip, b = 1 MiB per DCN step, c = 4 lanes per NIC.
  // c b/B = 167.8 us > L + P + b/B = 52.1 us: the uplink never idles.
  const Topology topo = hostsOf(4);
  Network net = dcnNetwork(topo);
  const uint64_t n = 16 * kMiB;
  const Collective c = allReduce(net, allChips(topo), n, AllReduceAlgorithm::kHierarchical);
  net.run();
  // ICI 128,229.12 ns + DCN 1,016,796.8 ns.
  const double closed = iciPhasesNs(n) + dcnPhaseNs(n / 4.0, 4, 4);
  EXPECT_NEAR(closed, 1'145'025.92, 0.01);
  expectWithin1Percent(ns(c.finishTime(net)), closed);
  // Every uplink carries 2(W-1) n / W = 24 MiB, every downlink the same.
  for (int h = 0; h < 4; ++h) {
    EXPECT_EQ(net.linkStats(net.dcnUplink(h)).bytes, 24 * kMiB);
    EXPECT_EQ(net.linkStats(net.dcnDownlink(h)).bytes, 24 * kMiB);
  }
}

TEST(Dcn, HierarchicalAllReduceMatchesTheClosedFormWhenLatencyBound) {
  // n = 64 KiB: b = 4 KiB, L + P + b/B = 10,327.68 ns > c b/B = 655.36 ns:
  // T_dcn = 2(W-1)(L + P + b/B) + (c-1) b/B = 62,457.6 ns; ICI 2,891.52 ns.
  const Topology topo = hostsOf(4);
  Network net = dcnNetwork(topo);
  const uint64_t n = 64 * 1024;
  const Collective c = allReduce(net, allChips(topo), n, AllReduceAlgorithm::kHierarchical);
  net.run();
  const double closed = iciPhasesNs(n) + dcnPhaseNs(n / 4.0, 4, 4);
  EXPECT_NEAR(closed, 65'349.12, 0.01);
  expectWithin1Percent(ns(c.finishTime(net)), closed);
}

TEST(Dcn, HierarchicalOnOneHostIsTheTorusAllReduce) {
  const Topology topo = hostsOf(1);
  Network a = dcnNetwork(topo), b(topo, iciLinks());
  const Collective h = allReduce(a, allChips(topo), 4 * kMiB, AllReduceAlgorithm::kHierarchical);
  const Collective t = allReduce(b, allChips(topo), 4 * kMiB, AllReduceAlgorithm::kTorus);
  a.run();
  b.run();
  EXPECT_EQ(h.finishTime(a), t.finishTime(b));
  EXPECT_EQ(h.elements_reduced, t.elements_reduced);
}

TEST(Dcn, TwoHierarchicalAllReducesShareTheNics) {
  // One chip per host (no ICI phase), 4 hosts, n = 16 MiB, b = 4 MiB = 167,772.16 ns on a NIC.
  // Alone: 2(W-1)(L + P + b/B) = 6 x 177,936 = 1,067,616 ns. Two at once put two messages on
  // every uplink per step, like c = 2 lanes: 2(W-1) 2 b/B + L + P = 2,023,429.76 ns, 1.895x.
  const Topology topo = hostsOf(4, true);
  const uint64_t n = 16 * kMiB;
  Network alone = dcnNetwork(topo);
  const Collective one = allReduce(alone, allChips(topo), n, AllReduceAlgorithm::kHierarchical);
  alone.run();
  Network shared = dcnNetwork(topo);
  const Collective first = allReduce(shared, allChips(topo), n, AllReduceAlgorithm::kHierarchical);
  const Collective second = allReduce(shared, allChips(topo), n, AllReduceAlgorithm::kHierarchical);
  shared.run();
  const double t1 = ns(one.finishTime(alone));
  const double t2 = ns(std::max(first.finishTime(shared), second.finishTime(shared)));
  expectWithin1Percent(t1, dcnPhaseNs(n, 1, 4));
  expectWithin1Percent(t2, dcnPhaseNs(n, 2, 4));
  EXPECT_NEAR(t2 / t1, 2'023'429.76 / 1'067'616.0, 0.01);
  EXPECT_EQ(shared.linkStats(shared.dcnUplink(0)).bytes, 2 * alone.linkStats(alone.dcnUplink(0)).bytes);
}

TEST(Dcn, ReducedBytesClosedFormMatchesTheDecomposition) {
  // 3 hosts of 2x2x1, uneven chunks: the ICI torus share plus (W-1)/W of the chip's share.
  const Topology topo = hostsOf(3);
  for (uint64_t bytes : {uint64_t{12} << 20, uint64_t{1'000'003}}) {
    Network net = dcnNetwork(topo);
    const Collective c = allReduce(net, allChips(topo), bytes, AllReduceAlgorithm::kHierarchical, 1);
    for (ChipId m = 0; m < topo.numChips(); ++m) {
      EXPECT_EQ(allReduceReducedBytes(topo, bytes, AllReduceAlgorithm::kHierarchical, m), c.elements_reduced[m])
          << "member " << m << ", " << bytes << " B";
    }
  }
  // 12 MiB: x reduces 6 MiB, y 3 MiB, the DCN ring 2/3 of 3 MiB = 2 MiB.
  EXPECT_EQ(allReduceReducedBytes(topo, 12 * kMiB, AllReduceAlgorithm::kHierarchical, 0), 11 * kMiB);
}

TEST(Dcn, BadInputsAreOneLineErrors) {
  EXPECT_EQ(errorOf([] { Topology(TopologyKind::kTorus3d, {2, 2, 1}, 0, 0); }),
            "ICI: a topology needs at least one slice, got 0");
  const Topology topo = hostsOf(2);
  Network net = dcnNetwork(topo);
  EXPECT_EQ(errorOf([&] { allReduce(net, {}, kMiB, AllReduceAlgorithm::kHierarchical); }),
            "all-reduce over an empty group of chips");
  EXPECT_EQ(errorOf([&] { allReduce(net, {0, 1, 2, 3}, kMiB, AllReduceAlgorithm::kHierarchical); }),
            "hierarchical all-reduce needs the whole topology, in chip-id order, as its group");
  EXPECT_EQ(errorOf([&] { allReduce(net, allChips(topo), kMiB, AllReduceAlgorithm::kTorus); }),
            "torus all-reduce runs on one slice; across 2 slices use the hierarchical one");
  Network no_dcn(topo, iciLinks());
  EXPECT_EQ(errorOf([&] { allReduce(no_dcn, allChips(topo), kMiB, AllReduceAlgorithm::kHierarchical); }),
            "hierarchical all-reduce over 2 hosts needs a network with the DCN");
  EXPECT_EQ(errorOf([&] { no_dcn.addTransfer(0, 4, kMiB); }),
            "transfer chip0 -> chip4: the chips are on different slices and the network has no DCN");
  Network bad(topo, iciLinks());
  EXPECT_EQ(errorOf([&] { bad.attachDcn(DcnLinkConfig{0, kLatencyNs}); }),
            "DCN host bandwidth must be positive, got 0.000000 bytes/s");
  EXPECT_EQ(errorOf([&] { bad.attachDcn(DcnLinkConfig{25e9, -1}); }), "DCN latency must be >= 0");
}

}  // namespace
}  // namespace tpusim
