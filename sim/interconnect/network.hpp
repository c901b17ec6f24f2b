// The ICI network as a discrete-event model of link transfers.
//
// A transfer moves B bytes from one chip to another over a minimal route,
// once every transfer it depends on has delivered its last byte. Time is in
// integer picoseconds. Per hop:
//   eligible = head arrival at the hop's chip (the ready time at the source) + router latency
//   start    = max(eligible, the time the directed link is free)      -- FCFS per link
//   the link is busy for ser(B) = B / bandwidth; the head packet reaches the
//   next chip at start + ser(packet) + link latency.
// The last byte reaches the destination at start_last_hop + ser(B) + link latency.
// So packets are store-and-forward (a packet is received whole before it
// moves on) and pipelined across hops; uncontended, h hops take
//   h * (router + link latency) + (h - 1) * ser(packet) + ser(B).
// What is simplified (docs/interconnect.md, "Flow control"):
// - a link is granted to whole messages in the order their heads become
//   eligible; packets of two messages do not interleave on one link;
// - buffers are unbounded: no credits, a blocked hop never stalls upstream.
// Events are processed in (time, transfer id) order, so runs are deterministic.
//
// Granularity::kPacket is the validation mode for the first simplification:
// each packet is its own transfer, granted the link on its own, so packets of
// different messages interleave; a zero-time join at the destination marks the
// message done. Uncontended it gives the same times as kMessage (tested); it
// costs one event per packet per hop, so it is for small cases.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/common/stats.hpp"
#include "sim/interconnect/link_config.hpp"
#include "sim/interconnect/routing.hpp"

namespace tpusim {

using TransferId = int32_t;

enum class Granularity {
  kMessage,  // a message holds a link for all its bytes (the fast default)
  kPacket,   // every packet is granted each link on its own (validation)
};

struct LinkStats {
  uint64_t bytes = 0;
  uint64_t messages = 0;
  uint64_t busy_ps = 0;
  uint64_t max_queue_ps = 0;  // longest wait of a message for this link
};

class Network {
 public:
  Network(const Topology& topology, const IciLinkConfig& config, RoutingMode routing = RoutingMode::kDimensionOrder,
          Granularity granularity = Granularity::kMessage);

  // Adds a transfer that may start once every dep has delivered and not
  // before earliest_ps. A chip id out of range is a one-line error; src == dst
  // is a local copy that takes no link time.
  TransferId addTransfer(ChipId src, ChipId dst, uint64_t bytes, std::span<const TransferId> deps = {},
                         uint64_t earliest_ps = 0);

  // Simulates every transfer added so far. Call once.
  void run();

  // After run(): when the last byte of the transfer was at its destination.
  uint64_t doneTime(TransferId id) const { return m_transfers[id].done_ps; }
  uint64_t makespan() const { return m_makespan_ps; }
  const LinkStats& linkStats(LinkId link) const { return m_links[link].stats; }
  // Transfers the model holds: one per message, or per packet plus a join.
  size_t numTransfers() const { return m_transfers.size(); }
  uint64_t numHops() const { return m_hops; }

  // Per-link counters (bytes, busy_ps, max_queue_ps) for every link that
  // carried traffic, named "<prefix>.chip5.x+.bytes", plus totals.
  void registerStats(StatsRegistry& registry, const std::string& prefix) const;

  const Topology& topology() const { return m_topology; }
  const IciLinkConfig& config() const { return m_config; }
  // Serialization time of `bytes` on one link, rounded up to a picosecond.
  uint64_t serializationPs(uint64_t bytes) const;

 private:
  struct Transfer {
    ChipId src, dst, at;
    uint64_t bytes;
    uint64_t ready_ps;
    uint64_t done_ps = 0;
    uint64_t ser_all_ps = 0;
    uint64_t ser_head_ps = 0;
    int32_t pending_deps = 0;
    std::array<int32_t, kDims> hops_left{};
  };
  struct Link {
    uint64_t free_ps = 0;
    LinkStats stats;
  };
  struct Event {
    uint64_t time_ps;
    TransferId id;
    bool operator>(const Event& o) const { return time_ps != o.time_ps ? time_ps > o.time_ps : id > o.id; }
  };

  void launch(TransferId id, std::vector<Event>& heap);
  void complete(TransferId id, std::vector<Event>& heap);
  void hop(const Event& event, std::vector<Event>& heap);
  int chooseDimension(const Transfer& t) const;
  TransferId addUnit(ChipId src, ChipId dst, uint64_t bytes, std::span<const TransferId> deps, uint64_t earliest_ps);

  Topology m_topology;
  IciLinkConfig m_config;
  RoutingMode m_routing;
  Granularity m_granularity;
  double m_ps_per_byte;
  uint64_t m_router_ps;
  uint64_t m_wire_ps;
  std::vector<Transfer> m_transfers;
  std::vector<std::pair<TransferId, TransferId>> m_edges;  // (dep, dependent)
  std::vector<uint32_t> m_dependents_begin;                // CSR over m_dependents, built in run()
  std::vector<TransferId> m_dependents;
  std::vector<Link> m_links;
  uint64_t m_makespan_ps = 0;
  uint64_t m_hops = 0;
  bool m_ran = false;
};

}  // namespace tpusim
