// The ICI network as a discrete-event model of link transfers.
//
// A transfer moves B bytes from one chip to another over a minimal route,
// once every transfer it depends on has delivered its last byte. Time is in
// integer picoseconds. Per hop:
//   eligible = head arrival at the hop's chip (the ready time at the source) + router latency
//   start    = max(eligible, the time the directed link is free)      -- FCFS per link
//   the link is busy for ser(B) = B / bandwidth; the head packet reaches the
//   next chip at start + ser(packet) + link latency (+ the link's extra latency,
//   an optical circuit switch on the way: setExtraLatency).
// The last byte reaches the destination at start_last_hop + ser(B) + link latency.
// So packets are store-and-forward (a packet is received whole before it
// moves on) and pipelined across hops; uncontended, h hops take
//   h * (router + link latency) + (h - 1) * ser(packet) + ser(B).
//
// Credits (docs/interconnect.md, "Credits and back-pressure"): the input
// buffer at the far end of each link holds k = buffer_bytes / packet_bytes
// packets; a packet crosses the link only with a free slot, and the slot's
// credit returns to the sender one link latency after the packet left the
// buffer (took its next link, or arrived at its destination). A link held by
// a message but waiting for credit is stalled (LinkStats::stalled_ps).
// - kMessage grants a link to a whole message; the link is released at
//   max(its own paced end, the time the next link has taken all but k packets
//   of the message + credit latency): the closed form in the docs, resolved
//   when the message's next hop starts (so a link whose holder has not started
//   its next hop queues later messages until it does).
// - kPacket is the validation mode: each packet is its own transfer with
//   exact credit counters and credit-return events; packets of different
//   messages interleave on a link. It costs one event per packet per hop.
// Without virtual channels a cycle of messages each waiting for a link the
// next one holds would deadlock; the message that closes such a cycle gets
// an escape buffer (its upstream link is released as with unbounded buffers).
// Events are processed in (time, id) order, so runs are deterministic.
//
// Two ways to drive it. Batch: add transfers, then run() once. Incremental
// (the pod, sim/chip/pod.hpp): advanceTo(t) processes every event up to t,
// addTransfer then starts transfers no earlier than now(), nextEventTime()
// says when to advance next, and a group (openGroup ... closeGroup) reports
// when its last transfer delivered. With recycling on, a delivered transfer's
// slot is reused, so memory follows the transfers in flight, not all of them.
//
// With a DCN attached (attachDcn, sim/interconnect/dcn.hpp) each slice of the
// topology is a host with an uplink and a downlink after the ICI links, and a
// transfer between slices takes those two hops instead of ICI hops (no
// credits on the NIC links).
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sim/common/stats.hpp"
#include "sim/interconnect/dcn.hpp"
#include "sim/interconnect/link_config.hpp"
#include "sim/interconnect/routing.hpp"
#include "sim/interconnect/transfer_sink.hpp"

namespace tpusim {

using GroupId = int32_t;

enum class Granularity {
  kMessage,  // a message holds a link for all its bytes (the fast default)
  kPacket,   // every packet is granted each link on its own (validation)
};

struct LinkStats {
  uint64_t bytes = 0;
  uint64_t messages = 0;
  uint64_t busy_ps = 0;
  uint64_t max_queue_ps = 0;  // longest wait of a message for this link
  uint64_t stalled_ps = 0;    // held for a message but idle for lack of credit
};

class Network : public TransferSink {
 public:
  static constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

  Network(const Topology& topology, const IciLinkConfig& config, RoutingMode routing = RoutingMode::kDimensionOrder,
          Granularity granularity = Granularity::kMessage);

  // Adds a transfer that may start once every dep has delivered, not before
  // earliest_ps and not before now(). A chip id out of range is a one-line
  // error; src == dst is a local copy that takes no link time. With recycling,
  // deps must not have delivered yet (add a collective's transfers together).
  // `way` (+1 or -1, 0: none) picks the way round a dimension of size 2, where both
  // links reach the same neighbour: a ring's two directions then take different links.
  TransferId addTransfer(ChipId src, ChipId dst, uint64_t bytes, std::span<const TransferId> deps = {},
                         uint64_t earliest_ps = 0, int way = 0) override;

  // A transfer over a given route (signed hops per dimension, taken as the routing mode
  // orders them) that must reach dst, or with route nullptr over the DCN (the uplink of src's
  // host, the downlink of dst's): for a network simulating a quotient of a larger slice
  // (sim/interconnect/symmetry.hpp), where the route is the larger slice's.
  TransferId addRoutedTransfer(ChipId src, ChipId dst, const HopPlan* route, uint64_t bytes,
                               std::span<const TransferId> deps = {}, uint64_t earliest_ps = 0);

  // Batch use: simulates every transfer added so far (to the end).
  void run();

  // Incremental use. advanceTo processes every event at or before time_ps
  // (never backwards) and sets now() (kNever: to the end, now() = makespan);
  // nextEventTime is kNever when idle.
  void advanceTo(uint64_t time_ps);
  uint64_t now() const { return m_now_ps; }
  uint64_t nextEventTime() const { return m_heap.empty() ? kNever : m_heap.front().time_ps; }
  // Transfers added between openGroup and closeGroup form a group; a group
  // with no transfer (or only delivered ones) finishes at closeGroup.
  GroupId openGroup();
  void closeGroup();
  // Groups whose finish time became known since the last call, in that order.
  // A transfer's delivery time is known when it takes its last link, so a
  // group is reported then; its groupDoneTime is >= now().
  std::vector<GroupId> takeFinishedGroups();
  // When the group's last byte arrived (now() at closeGroup if it had no transfer).
  uint64_t groupDoneTime(GroupId group) const { return m_groups[group].done_ps; }
  // Reuse delivered transfers' slots (doneTime is then unavailable).
  void setRecycling(bool on) { m_recycle = on; }
  // Extra latency on a directed link (an OCS on its path), added to its wire time.
  void setExtraLatency(LinkId link, uint64_t ps);
  // Joins the topology's slices, one host each, through the DCN (before any transfer).
  void attachDcn(const DcnLinkConfig& dcn);
  bool hasDcn() const override { return m_has_dcn; }
  const DcnLinkConfig& dcnConfig() const { return m_dcn; }
  // A host's NIC links; their ids follow the ICI link slots.
  LinkId dcnUplink(int host) const { return m_topology.numLinkSlots() + 2 * host; }
  LinkId dcnDownlink(int host) const { return m_topology.numLinkSlots() + 2 * host + 1; }
  // Serialization time of `bytes` on one NIC link.
  uint64_t dcnSerializationPs(uint64_t bytes) const;

  // After delivery (without recycling): when the last byte was at its destination.
  uint64_t doneTime(TransferId id) const { return m_transfers[id].done_ps; }
  uint64_t makespan() const { return m_makespan_ps; }
  const LinkStats& linkStats(LinkId link) const { return m_links[link].stats; }
  // Transfer slots the model holds: one per message, or per packet plus a join.
  size_t numTransfers() const { return m_transfers.size(); }
  uint64_t numHops() const { return m_hops; }
  // Cycles of credit waits broken by an escape buffer (kMessage).
  uint64_t numEscapes() const { return m_escapes; }
  // Bytes the model holds for transfers, edges, events and links (its footprint).
  size_t memoryBytes() const;

  // Per-link counters (bytes, busy_ps, max_queue_ps, stalled_ps) for every link that
  // carried traffic, named "<prefix>.chip5.x+.bytes" ("<prefix>.host1.dcn_up.bytes"
  // for a NIC link), plus the totals.
  void registerStats(StatsRegistry& registry, const std::string& prefix) const;
  // The totals only: bytes, busy_ps, max_queue_ps, stalled_ps, makespan_ps, link_utilization
  // (ICI links), and with a DCN "<prefix>.dcn.bytes", ".busy_ps", ".max_queue_ps".
  void registerTotals(StatsRegistry& registry, const std::string& prefix) const;

  const Topology& topology() const override { return m_topology; }
  const IciLinkConfig& config() const { return m_config; }
  // Serialization time of `bytes` on one link, rounded up to a picosecond.
  uint64_t serializationPs(uint64_t bytes) const;

 private:
  enum class State : uint8_t { kWaiting, kMoving, kDelivered, kFree };
  struct Transfer {
    ChipId src, dst, at;
    uint64_t bytes;
    uint64_t ready_ps;  // ready at the source; while queued for a link, when it became eligible
    uint64_t done_ps = 0;
    uint64_t ser_all_ps = 0;
    uint64_t ser_head_ps = 0;
    int32_t pending_deps = 0;
    int8_t dcn_hops_left = 0;  // 2: uplink then downlink; 0: ICI hops only
    int32_t first_edge = -1;   // head of the list of transfers that depend on this one
    // kPacket: the link into the buffer the packet sits in (its credit returns when
    // the packet leaves); kMessage: the link it holds whose release awaits this hop.
    LinkId held_link = -1;
    LinkId waiting_for = -1;  // the link it is queued for, -1 when not queued
    TransferId next_waiting = -1;
    uint64_t arrival_bound_ps = 0;  // kMessage: the next hop cannot end before the last packet arrives
    GroupId group = -1;
    State state = State::kWaiting;
    std::array<int32_t, kDims> hops_left{};
  };
  struct Edge {
    TransferId dependent;
    int32_t next;
  };
  struct Link {
    uint64_t free_ps = 0;
    uint64_t extra_ps = 0;
    TransferId queue_head = -1, queue_tail = -1;  // FIFO of transfers waiting for it
    uint64_t queued_ps = 0;                       // their serialization time, for adaptive routing
    // kPacket: free slots in the far end's buffer, and since when it has been
    // idle with a packet waiting for credit (kNever: not stalled).
    int32_t credits = 0;
    uint64_t stall_since = kNever;
    // kMessage: the holder whose release is not known yet (-1: none), its
    // start, its release as far as known, and the link it holds before this one.
    TransferId holder = -1;
    LinkId upstream = -1;
    uint64_t hold_start = 0, hold_release = 0;
    // kMessage on a paced link: when the credit the next message's first packet needs is back.
    uint64_t credit_floor_ps = 0;
    LinkStats stats;
  };
  struct Event {
    uint64_t time_ps;
    TransferId id;  // a transfer's next hop, or -(link + 1): a credit returns to that link (kPacket)
    bool operator>(const Event& o) const { return time_ps != o.time_ps ? time_ps > o.time_ps : id > o.id; }
  };
  struct Group {
    int32_t outstanding = 0;
    uint64_t done_ps = 0;
    bool open = true;
  };

  void schedule(uint64_t time_ps, TransferId id);
  void launch(TransferId id);
  void deliver(TransferId id);
  void hop(const Event& event);
  void dcnHop(const Event& event);
  void enqueue(LinkId link, TransferId id, uint64_t eligible_ps);
  TransferId popWaiting(LinkId link);
  void grantMessage(LinkId link, TransferId id, uint64_t eligible_ps);
  void grantPacket(LinkId link, TransferId id, uint64_t eligible_ps);
  void creditReturned(LinkId link, uint64_t time_ps);
  void resolveAll();
  void advanceChain(Transfer& t, LinkId link, uint64_t start_ps, bool last_hop);
  bool closesCycle(TransferId id, LinkId link) const;
  uint64_t wirePs(LinkId link) const { return m_wire_ps + m_links[link].extra_ps; }
  uint64_t roundTripPs(const Transfer& t, LinkId link, bool last_hop) const;
  uint64_t pacedOffsetPs(const Transfer& t, uint64_t packet, uint64_t rtt_ps) const;
  uint64_t numPackets(const Transfer& t) const { return (t.bytes + m_config.packet_bytes - 1) / m_config.packet_bytes; }
  uint64_t lastPacketPs(const Transfer& t) const {
    return serializationPs(t.bytes - (numPackets(t) - 1) * m_config.packet_bytes);
  }
  uint64_t firstHopDelay(const Transfer& t) const { return t.dcn_hops_left > 0 ? 0 : m_router_ps; }
  int chooseDimension(const Transfer& t) const;
  void checkChips(ChipId src, ChipId dst) const;
  // route: the hops of a transfer within a slice; nullptr: one between slices, over the DCN.
  TransferId addMessage(ChipId src, ChipId dst, const HopPlan* route, uint64_t bytes, std::span<const TransferId> deps,
                        uint64_t earliest_ps);
  TransferId addUnit(ChipId src, ChipId dst, const HopPlan* route, uint64_t bytes, std::span<const TransferId> deps,
                     uint64_t earliest_ps);
  static bool isLocal(const Transfer& t) {
    return t.dcn_hops_left == 0 && t.hops_left[0] == 0 && t.hops_left[1] == 0 && t.hops_left[2] == 0;
  }
  TransferId newSlot();
  int32_t newEdge(TransferId dependent, int32_t next);
  void finishInGroup(GroupId group, uint64_t done_ps);

  Topology m_topology;
  IciLinkConfig m_config;
  RoutingMode m_routing;
  Granularity m_granularity;
  double m_ps_per_byte;
  uint64_t m_router_ps;
  uint64_t m_wire_ps;
  uint64_t m_slots;  // packets per input buffer
  std::vector<Transfer> m_transfers;
  std::vector<TransferId> m_free_transfers;
  std::vector<Edge> m_edges;
  std::vector<int32_t> m_free_edges;
  std::vector<Link> m_links;
  std::vector<Event> m_heap;
  std::vector<TransferId> m_delivering;                  // scratch of deliver()
  std::vector<std::pair<LinkId, uint64_t>> m_resolving;  // scratch of resolve()
  std::vector<Group> m_groups;
  std::vector<GroupId> m_finished_groups;
  GroupId m_open_group = -1;
  uint64_t m_now_ps = 0;
  uint64_t m_makespan_ps = 0;
  uint64_t m_hops = 0;
  uint64_t m_escapes = 0;
  bool m_recycle = false;
  bool m_has_dcn = false;
  DcnLinkConfig m_dcn;
  double m_dcn_ps_per_byte = 0;
  uint64_t m_dcn_latency_ps = 0;
};

// The totals of Network::registerTotals from per-link counters: `links` by LinkId of
// `topology`, and with a DCN its NIC links.
void registerLinkTotals(StatsRegistry& registry, const std::string& prefix, const Topology& topology,
                        std::span<const LinkStats> links, std::optional<std::span<const LinkStats>> dcn_links,
                        uint64_t makespan_ps);

}  // namespace tpusim
