// The network driven incrementally, as the pod drives it: advancing to a time,
// adding transfers at the current time, groups that report when they finish,
// recycled transfer slots, and agreement with the batch run.
#include <gtest/gtest.h>

#include <vector>

#include "sim/interconnect/collectives.hpp"
#include "sim/interconnect/network.hpp"

namespace tpusim {
namespace {

// 100 GB/s = 10 ps per byte; alpha per hop = 500 ns link + 100 ns router.
IciLinkConfig testLinks() {
  IciLinkConfig c;
  c.bandwidth_bytes_per_s = 100e9;
  c.link_latency_ns = 500;
  c.router_latency_ns = 100;
  c.packet_bytes = 4096;
  c.buffer_bytes = 256 * 1024;  // 64 packets, the presets' (assumed) buffer
  return c;
}

TEST(IciNetworkIncremental, ATransferAddedLaterStartsAtTheCurrentTime) {
  Network net(Topology::parse(TopologyKind::kRing, "4"), testLinks());
  EXPECT_EQ(net.nextEventTime(), Network::kNever);
  net.advanceTo(5'000'000);
  const TransferId id = net.addTransfer(0, 1, 1'000'000);
  // Its head is at the router until 5.1 us: the next event.
  EXPECT_EQ(net.nextEventTime(), 5'100'000u);
  net.run();
  // 5 us + 100 ns router + 10 us of bytes + 500 ns wire.
  EXPECT_EQ(net.doneTime(id), 15'600'000u);
}

TEST(IciNetworkIncremental, AGroupFinishesWithItsLastTransfer) {
  Network net(Topology::parse(TopologyKind::kRing, "8"), testLinks());
  const GroupId g = net.openGroup();
  const TransferId a = net.addTransfer(0, 1, 1'000'000);
  const TransferId deps[] = {a};
  net.addTransfer(1, 2, 1'000'000, deps);
  net.closeGroup();
  net.advanceTo(10'600'000);  // a delivered; b waits at the router until 10.7 us
  EXPECT_TRUE(net.takeFinishedGroups().empty());
  net.advanceTo(10'700'000);
  // b takes its last (and only) link at 10.7 us, so its delivery time is known:
  // the group is reported then, with the time its last byte arrives,
  // 10.6 us + 100 ns router + 10 us of bytes + 500 ns wire = 21.2 us.
  EXPECT_EQ(net.takeFinishedGroups(), std::vector<GroupId>{g});
  EXPECT_EQ(net.groupDoneTime(g), 21'200'000u);
}

TEST(IciNetworkIncremental, AnEmptyGroupFinishesWhenItCloses) {
  Network net(Topology::parse(TopologyKind::kRing, "4"), testLinks());
  net.advanceTo(700);
  const GroupId g = net.openGroup();
  net.addTransfer(2, 2, 64);  // a local copy: delivered at once
  net.closeGroup();
  EXPECT_EQ(net.takeFinishedGroups(), std::vector<GroupId>{g});
  EXPECT_EQ(net.groupDoneTime(g), 700u);
}

TEST(IciNetworkIncremental, SteppingThroughEventsGivesTheBatchTimes) {
  // A torus all-reduce, run in one go and then advanced event by event with a
  // second all-reduce joining half-way: the first's transfers delivered before
  // the join must not depend on how the network is stepped, and the second
  // shares its links.
  const Topology torus = Topology::parse(TopologyKind::kTorus3d, "4x4x2");
  Network batch(torus, testLinks());
  const Collective c = allReduce(batch, allChips(torus), 4 << 20, AllReduceAlgorithm::kTorus);
  batch.run();

  const uint64_t alone = c.finishTime(batch);
  const uint64_t join = alone / 2;
  Network stepped(torus, testLinks());
  const Collective d = allReduce(stepped, allChips(torus), 4 << 20, AllReduceAlgorithm::kTorus);
  bool joined = false;
  Collective e;
  while (stepped.nextEventTime() != Network::kNever) {
    const uint64_t next = stepped.nextEventTime();
    if (!joined && next > join) {
      stepped.advanceTo(join);
      e = allReduce(stepped, allChips(torus), 4 << 20, AllReduceAlgorithm::kTorus);
      joined = true;
      continue;
    }
    stepped.advanceTo(next);
  }
  ASSERT_TRUE(joined);
  for (size_t i = 0; i < c.transfers.size(); ++i) {
    if (batch.doneTime(c.transfers[i]) <= join) {
      EXPECT_EQ(stepped.doneTime(d.transfers[i]), batch.doneTime(c.transfers[i]));
    }
  }
  EXPECT_GT(d.finishTime(stepped), alone);  // it waits for the second's chunks on shared links
  // The second started at the join, so it cannot end before the join + one all-reduce alone.
  EXPECT_GT(e.finishTime(stepped), join + alone);
}

TEST(IciNetworkIncremental, RecyclingKeepsOnlyTheTransfersInFlight) {
  const Topology torus = Topology::parse(TopologyKind::kTorus3d, "4x4x4");
  Network net(torus, testLinks());
  net.setRecycling(true);
  std::vector<uint64_t> done;
  size_t slots_after_first = 0;
  for (int i = 0; i < 5; ++i) {
    const GroupId g = net.openGroup();
    allReduce(net, allChips(torus), 1 << 20, AllReduceAlgorithm::kTorus);
    net.closeGroup();
    net.advanceTo(Network::kNever);
    const std::vector<GroupId> finished = net.takeFinishedGroups();
    ASSERT_EQ(finished, std::vector<GroupId>{g});
    done.push_back(net.groupDoneTime(g));
    if (i == 0) slots_after_first = net.numTransfers();
  }
  // 4 x 64 x 3 x 3 = 2304 transfers per all-reduce; five in a row reuse the same slots.
  EXPECT_EQ(slots_after_first, 2304u);
  EXPECT_EQ(net.numTransfers(), slots_after_first);
  // Back to back on an idle network, each takes as long as the first.
  for (size_t i = 1; i < done.size(); ++i) EXPECT_EQ(done[i] - done[i - 1], done[0]);
}

}  // namespace
}  // namespace tpusim
