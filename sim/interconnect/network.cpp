#include "sim/interconnect/network.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>

#include "sim/common/error.hpp"

namespace tpusim {

namespace {

uint64_t nsToPs(double ns) {
  return static_cast<uint64_t>(std::llround(ns * 1000.0));
}

}  // namespace

Network::Network(const Topology& topology, const IciLinkConfig& config, RoutingMode routing, Granularity granularity)
    : m_topology(topology), m_config(config), m_routing(routing), m_granularity(granularity) {
  validateLinkConfig(config);
  m_ps_per_byte = 1e12 / config.bandwidth_bytes_per_s;
  m_router_ps = nsToPs(config.router_latency_ns);
  m_wire_ps = nsToPs(config.link_latency_ns);
  m_slots = config.bufferPackets();
  m_links.resize(topology.numLinkSlots());
  for (Link& link : m_links) link.credits = static_cast<int32_t>(std::min<uint64_t>(m_slots, 1u << 30));
}

uint64_t Network::serializationPs(uint64_t bytes) const {
  return static_cast<uint64_t>(std::ceil(static_cast<double>(bytes) * m_ps_per_byte));
}

void Network::setExtraLatency(LinkId link, uint64_t ps) {
  if (link < 0 || link >= m_topology.numLinkSlots() || !m_topology.linkExists(link)) {
    throw Error(ErrorKind::kInternal, "ICI: extra latency on a link that does not exist");
  }
  m_links[link].extra_ps = ps;
}

void Network::attachDcn(const DcnLinkConfig& dcn) {
  validateDcnConfig(dcn);
  if (m_has_dcn || !m_transfers.empty()) throw Error(ErrorKind::kInternal, "DCN: attach it once, before transfers");
  m_has_dcn = true;
  m_dcn = dcn;
  m_dcn_ps_per_byte = 1e12 / dcn.bandwidth_bytes_per_s;
  m_dcn_latency_ps = nsToPs(dcn.latency_ns);
  m_links.resize(static_cast<size_t>(m_topology.numLinkSlots()) + 2 * static_cast<size_t>(m_topology.slices()));
}

uint64_t Network::dcnSerializationPs(uint64_t bytes) const {
  return static_cast<uint64_t>(std::ceil(static_cast<double>(bytes) * m_dcn_ps_per_byte));
}

TransferId Network::addTransfer(ChipId src, ChipId dst, uint64_t bytes, std::span<const TransferId> deps,
                                uint64_t earliest_ps, int way) {
  checkChips(src, dst);
  if (m_topology.sliceOf(src) != m_topology.sliceOf(dst)) {
    if (!m_has_dcn) {
      throw Error(ErrorKind::kInvalidInput, "transfer chip" + std::to_string(src) + " -> chip" + std::to_string(dst) +
                                                ": the chips are on different slices and the network has no DCN");
    }
    return addMessage(src, dst, nullptr, bytes, deps, earliest_ps);
  }
  const HopPlan route = transferRoute(m_topology, src, dst, way);
  return addMessage(src, dst, &route, bytes, deps, earliest_ps);
}

TransferId Network::addRoutedTransfer(ChipId src, ChipId dst, const HopPlan* route, uint64_t bytes,
                                      std::span<const TransferId> deps, uint64_t earliest_ps) {
  checkChips(src, dst);
  if (route == nullptr) {
    if (!m_has_dcn) throw Error(ErrorKind::kInternal, "ICI: a transfer over the DCN on a network without one");
    return addMessage(src, dst, nullptr, bytes, deps, earliest_ps);
  }
  ChipId at = src;
  for (int d = 0; d < kDims; ++d) {
    for (int h = 0; h < std::abs(route->hops[d]); ++h) at = m_topology.neighbor(at, d, route->hops[d] > 0 ? 1 : -1);
  }
  if (at != dst) throw Error(ErrorKind::kInternal, "ICI: a routed transfer's route does not reach its destination");
  return addMessage(src, dst, route, bytes, deps, earliest_ps);
}

void Network::checkChips(ChipId src, ChipId dst) const {
  const int chips = m_topology.numChips();
  if (src < 0 || src >= chips || dst < 0 || dst >= chips) {
    throw Error(ErrorKind::kInvalidInput, "ICI transfer chip" + std::to_string(src) + " -> chip" + std::to_string(dst) +
                                              ": the topology has chips 0.." + std::to_string(chips - 1));
  }
}

TransferId Network::addMessage(ChipId src, ChipId dst, const HopPlan* route, uint64_t bytes,
                               std::span<const TransferId> deps, uint64_t earliest_ps) {
  const bool local = route != nullptr && route->total() == 0;
  if (m_granularity == Granularity::kMessage || local || bytes <= m_config.packet_bytes) {
    return addUnit(src, dst, route, bytes, deps, earliest_ps);
  }
  std::vector<TransferId> packets;
  for (uint64_t sent = 0; sent < bytes; sent += m_config.packet_bytes) {
    packets.push_back(addUnit(src, dst, route, std::min(m_config.packet_bytes, bytes - sent), deps, earliest_ps));
  }
  const HopPlan stay;
  return addUnit(dst, dst, &stay, 0, packets, earliest_ps);  // the join: done when the last packet is
}

TransferId Network::newSlot() {
  if (!m_free_transfers.empty()) {
    const TransferId id = m_free_transfers.back();
    m_free_transfers.pop_back();
    return id;
  }
  if (m_transfers.size() >= static_cast<size_t>(std::numeric_limits<TransferId>::max())) {
    throw Error(ErrorKind::kResource, "ICI: more than 2^31 transfers in flight");
  }
  m_transfers.emplace_back();
  return static_cast<TransferId>(m_transfers.size() - 1);
}

int32_t Network::newEdge(TransferId dependent, int32_t next) {
  if (!m_free_edges.empty()) {
    const int32_t e = m_free_edges.back();
    m_free_edges.pop_back();
    m_edges[e] = {dependent, next};
    return e;
  }
  m_edges.push_back({dependent, next});
  return static_cast<int32_t>(m_edges.size() - 1);
}

TransferId Network::addUnit(ChipId src, ChipId dst, const HopPlan* route, uint64_t bytes,
                            std::span<const TransferId> deps, uint64_t earliest_ps) {
  const TransferId id = newSlot();
  Transfer& t = m_transfers[id];
  t = Transfer{src, dst, src, bytes, std::max(earliest_ps, m_now_ps)};
  t.ser_all_ps = serializationPs(bytes);
  t.ser_head_ps = serializationPs(std::min(bytes, m_config.packet_bytes));
  if (route != nullptr) {
    t.hops_left = route->hops;
  } else {
    t.dcn_hops_left = 2;
  }
  t.group = m_open_group;
  if (t.group >= 0) ++m_groups[t.group].outstanding;
  for (TransferId dep : deps) {
    if (dep < 0 || static_cast<size_t>(dep) >= m_transfers.size() || dep == id ||
        m_transfers[dep].state == State::kFree) {
      throw Error(ErrorKind::kInternal, "ICI: a transfer depends on one that is not in the network");
    }
    Transfer& before = m_transfers[dep];
    if (before.state == State::kDelivered) {
      t.ready_ps = std::max(t.ready_ps, before.done_ps);
      continue;
    }
    before.first_edge = newEdge(id, before.first_edge);
    ++t.pending_deps;
  }
  if (t.pending_deps == 0) launch(id);
  return id;
}

void Network::schedule(uint64_t time_ps, TransferId id) {
  m_heap.push_back({time_ps, id});
  std::push_heap(m_heap.begin(), m_heap.end(), std::greater<>());
}

void Network::launch(TransferId id) {
  Transfer& t = m_transfers[id];
  t.state = State::kMoving;
  if (isLocal(t)) {
    t.done_ps = t.ready_ps;  // a local copy: no link time
    deliver(id);
    return;
  }
  schedule(t.ready_ps + firstHopDelay(t), id);
}

void Network::deliver(TransferId id) {
  // Iterative: local copies can chain without bounding the recursion depth.
  m_delivering.push_back(id);
  while (!m_delivering.empty()) {
    const TransferId done = m_delivering.back();
    m_delivering.pop_back();
    Transfer& t = m_transfers[done];
    t.state = State::kDelivered;
    m_makespan_ps = std::max(m_makespan_ps, t.done_ps);
    for (int32_t e = t.first_edge; e >= 0;) {
      Transfer& next = m_transfers[m_edges[e].dependent];
      next.ready_ps = std::max(next.ready_ps, t.done_ps);
      if (--next.pending_deps == 0) {
        next.state = State::kMoving;
        if (isLocal(next)) {
          next.done_ps = next.ready_ps;
          m_delivering.push_back(m_edges[e].dependent);
        } else {
          schedule(next.ready_ps + firstHopDelay(next), m_edges[e].dependent);
        }
      }
      m_free_edges.push_back(e);
      e = m_edges[e].next;
    }
    t.first_edge = -1;
    if (t.group >= 0) finishInGroup(t.group, t.done_ps);
    if (m_recycle) {
      t.state = State::kFree;
      m_free_transfers.push_back(done);
    }
  }
}

int Network::chooseDimension(const Transfer& t) const {
  int best = -1;
  uint64_t best_free = 0;
  for (int d = 0; d < kDims; ++d) {
    if (t.hops_left[d] == 0) continue;
    if (m_routing == RoutingMode::kDimensionOrder) return d;
    const Link& link = m_links[Topology::linkId(t.at, d, t.hops_left[d] > 0 ? 1 : -1)];
    const uint64_t free = link.free_ps + link.queued_ps;  // the messages queued behind a held link count too
    if (best < 0 || free < best_free) {
      best = d;
      best_free = free;
    }
  }
  return best;
}

void Network::dcnHop(const Event& event) {
  Transfer& t = m_transfers[event.id];
  const bool up = t.dcn_hops_left == 2;
  Link& link = m_links[up ? dcnUplink(m_topology.sliceOf(t.src)) : dcnDownlink(m_topology.sliceOf(t.dst))];
  const uint64_t start = std::max(event.time_ps, link.free_ps);
  const uint64_t ser_all = dcnSerializationPs(t.bytes);
  link.free_ps = start + ser_all;
  link.stats.bytes += t.bytes;
  link.stats.messages += 1;
  link.stats.busy_ps += ser_all;
  link.stats.max_queue_ps = std::max(link.stats.max_queue_ps, start - event.time_ps);
  ++m_hops;
  --t.dcn_hops_left;
  if (up) {  // the head packet crosses the fabric to the destination host's downlink
    schedule(start + dcnSerializationPs(std::min(t.bytes, m_config.packet_bytes)) + m_dcn_latency_ps, event.id);
    return;
  }
  t.at = t.dst;
  t.done_ps = start + ser_all;
  deliver(event.id);
}

void Network::hop(const Event& event) {
  if (event.id < 0) {
    creditReturned(-event.id - 1, event.time_ps);
    return;
  }
  Transfer& t = m_transfers[event.id];
  if (t.dcn_hops_left > 0) {
    dcnHop(event);
    return;
  }
  const int d = chooseDimension(t);
  const LinkId l = Topology::linkId(t.at, d, t.hops_left[d] > 0 ? 1 : -1);
  Link& link = m_links[l];
  if (m_granularity == Granularity::kPacket) {
    // A queue only forms while the far buffer is full (credits == 0).
    if (link.credits > 0) {
      grantPacket(l, event.id, event.time_ps);
      return;
    }
    if (link.queue_head < 0) link.stall_since = std::max(event.time_ps, link.free_ps);
    enqueue(l, event.id, event.time_ps);
    return;
  }
  if (link.holder < 0) {
    grantMessage(l, event.id, event.time_ps);
  } else {
    enqueue(l, event.id, event.time_ps);
    if (t.held_link >= 0 && closesCycle(event.id, l)) {
      // The escape buffer: the held links are released as if this hop had an unbounded buffer.
      ++m_escapes;
      for (LinkId up = t.held_link; up >= 0;) {
        const LinkId next = m_links[up].upstream;
        m_links[up].upstream = -1;
        m_resolving.emplace_back(up, m_links[up].hold_release);
        up = next;
      }
      t.held_link = -1;
    }
  }
  resolveAll();
}

void Network::enqueue(LinkId l, TransferId id, uint64_t eligible_ps) {
  Transfer& t = m_transfers[id];
  t.ready_ps = eligible_ps;
  t.waiting_for = l;
  t.next_waiting = -1;
  Link& link = m_links[l];
  if (link.queue_tail >= 0) {
    m_transfers[link.queue_tail].next_waiting = id;
  } else {
    link.queue_head = id;
  }
  link.queue_tail = id;
  link.queued_ps += t.ser_all_ps;
}

TransferId Network::popWaiting(LinkId l) {
  Link& link = m_links[l];
  const TransferId id = link.queue_head;
  link.queue_head = m_transfers[id].next_waiting;
  if (link.queue_head < 0) link.queue_tail = -1;
  m_transfers[id].waiting_for = -1;
  link.queued_ps -= m_transfers[id].ser_all_ps;
  return id;
}

// Follows "waits for a link held by" from the holder of `l`: a cycle back to `id` is a deadlock.
bool Network::closesCycle(TransferId id, LinkId l) const {
  TransferId holder = m_links[l].holder;
  for (size_t steps = 0; holder >= 0 && steps <= m_transfers.size(); ++steps) {
    if (holder == id) return true;
    const LinkId waits = m_transfers[holder].waiting_for;
    if (waits < 0) return false;
    holder = m_links[waits].holder;
  }
  return false;
}

uint64_t Network::roundTripPs(const Transfer& t, LinkId l, bool last_hop) const {
  // A packet holds its slot from its start on the link until it leaves the far
  // buffer (at the destination when it has arrived; at a router when it takes
  // its next link, one router latency later if that link is free), and the
  // credit takes one link latency back.
  return t.ser_head_ps + 2 * wirePs(l) + (last_hop ? 0 : m_router_ps);
}

uint64_t Network::pacedOffsetPs(const Transfer& t, uint64_t packet, uint64_t rtt_ps) const {
  // When k packets take less than a round trip, the sender sends k and waits for the first credit.
  if (m_slots * t.ser_head_ps >= rtt_ps) return packet * t.ser_head_ps;
  return (packet / m_slots) * rtt_ps + (packet % m_slots) * t.ser_head_ps;
}

// A message of n packets started on `l` at start_ps. Its link m hops back,
// still held, cannot send its last packet before packet n-1-mk has taken `l`
// and the credits have come back over those m links (each link's packet j
// waits for the slot packet j-k frees when it moves on):
//   release >= start + offset_l(n-1-mk) + (wire of those m links) + ser(last packet).
// Once n-1-(m+1)k < 0 (or `l` is the last hop) no later hop can hold it back:
// the link is released.
void Network::advanceChain(Transfer& t, LinkId l, uint64_t start_ps, bool last_hop) {
  const uint64_t n = numPackets(t);
  const uint64_t rtt = roundTripPs(t, l, last_hop);
  uint64_t credit_ps = 0;
  LinkId below = -1;
  uint64_t m = 1;
  for (LinkId up = t.held_link; up >= 0; ++m) {
    Link& link = m_links[up];
    credit_ps += wirePs(up);
    const uint64_t bound = start_ps + pacedOffsetPs(t, n - 1 - m * m_slots, rtt) + credit_ps + lastPacketPs(t);
    link.hold_release = std::max(link.hold_release, bound);
    const LinkId next = link.upstream;
    if (last_hop || n - 1 < (m + 1) * m_slots) {
      if (below >= 0) {
        m_links[below].upstream = -1;
      } else {
        t.held_link = -1;
      }
      link.upstream = -1;
      m_resolving.emplace_back(up, link.hold_release);
    } else {
      below = up;
    }
    up = next;
  }
}

void Network::grantMessage(LinkId l, TransferId id, uint64_t eligible_ps) {
  Transfer& t = m_transfers[id];
  Link& link = m_links[l];
  // A waiter granted when the link is released starts no earlier than now() (a safeguard: releases are
  // known before they happen).
  const uint64_t free = std::max({eligible_ps, link.free_ps, m_now_ps});
  const uint64_t start = std::max(free, link.credit_floor_ps);
  link.stats.stalled_ps += start - free;  // idle, the previous message's credits still out
  const int d = m_topology.linkDim(l);
  const int dir = m_topology.linkDir(l);
  const uint64_t wire = wirePs(l);
  link.stats.bytes += t.bytes;
  link.stats.messages += 1;
  link.stats.busy_ps += t.ser_all_ps;
  link.stats.max_queue_ps = std::max(link.stats.max_queue_ps, start - eligible_ps);
  ++m_hops;
  t.hops_left[d] -= dir;
  t.at = m_topology.neighbor(t.at, d, dir);
  const bool last = t.hops_left[0] == 0 && t.hops_left[1] == 0 && t.hops_left[2] == 0;
  // Only a message of more than k packets can run out of credit on the way.
  const bool big = numPackets(t) > m_slots;
  uint64_t earliest = start + t.ser_all_ps;
  if (big) {
    const uint64_t rtt = roundTripPs(t, l, last);
    if (m_slots * t.ser_head_ps < rtt) {
      earliest = start + pacedOffsetPs(t, numPackets(t) - 1, rtt) + lastPacketPs(t);
      // The next message's first packet needs the credit of this one's packet n - k.
      link.credit_floor_ps = start + pacedOffsetPs(t, numPackets(t) - m_slots, rtt) + rtt;
    }
    earliest = std::max(earliest, t.arrival_bound_ps);
    t.arrival_bound_ps = earliest + wire + m_router_ps + lastPacketPs(t);
  }
  link.free_ps = earliest;
  if (last) {
    if (t.at != t.dst) throw Error(ErrorKind::kInternal, "ICI: a transfer arrived at the wrong chip");
    link.stats.stalled_ps += earliest - start - t.ser_all_ps;
    t.done_ps = earliest + wire;
    advanceChain(t, l, start, true);
    deliver(id);
    return;
  }
  if (big) {  // held until the hops after it have started (advanceChain)
    advanceChain(t, l, start, false);
    link.holder = id;
    link.upstream = t.held_link;
    link.hold_start = start;
    link.hold_release = earliest;
    t.held_link = l;
  }
  schedule(start + t.ser_head_ps + wire + m_router_ps, id);
}

void Network::resolveAll() {
  while (!m_resolving.empty()) {
    const auto [l, release] = m_resolving.back();
    m_resolving.pop_back();
    Link& link = m_links[l];
    link.stats.stalled_ps += release - link.hold_start - m_transfers[link.holder].ser_all_ps;
    link.free_ps = release;
    link.holder = -1;
    while (link.holder < 0 && link.queue_head >= 0) {
      const TransferId next = popWaiting(l);
      grantMessage(l, next, m_transfers[next].ready_ps);
    }
  }
}

void Network::grantPacket(LinkId l, TransferId id, uint64_t eligible_ps) {
  Transfer& t = m_transfers[id];
  Link& link = m_links[l];
  --link.credits;
  const uint64_t start = std::max(eligible_ps, link.free_ps);
  const int d = m_topology.linkDim(l);
  const int dir = m_topology.linkDir(l);
  const uint64_t wire = wirePs(l);
  link.free_ps = start + t.ser_all_ps;
  link.stats.bytes += t.bytes;
  link.stats.messages += 1;
  link.stats.busy_ps += t.ser_all_ps;
  link.stats.max_queue_ps = std::max(link.stats.max_queue_ps, start - eligible_ps);
  ++m_hops;
  // Leaving the buffer it sat in returns that slot's credit one link latency later.
  if (t.held_link >= 0) schedule(start + wirePs(t.held_link), -t.held_link - 1);
  t.hops_left[d] -= dir;
  t.at = m_topology.neighbor(t.at, d, dir);
  if (t.hops_left[0] == 0 && t.hops_left[1] == 0 && t.hops_left[2] == 0) {
    if (t.at != t.dst) throw Error(ErrorKind::kInternal, "ICI: a transfer arrived at the wrong chip");
    t.done_ps = start + t.ser_all_ps + wire;
    t.held_link = -1;
    schedule(t.done_ps + wire, -l - 1);  // the destination takes it out of the buffer on arrival
    deliver(id);
    return;
  }
  t.held_link = l;
  schedule(start + t.ser_head_ps + wire + m_router_ps, id);
}

void Network::creditReturned(LinkId l, uint64_t time_ps) {
  Link& link = m_links[l];
  ++link.credits;
  if (link.queue_head < 0) return;
  if (time_ps > link.stall_since) link.stats.stalled_ps += time_ps - link.stall_since;
  const TransferId next = popWaiting(l);
  grantPacket(l, next, std::max(m_transfers[next].ready_ps, time_ps));
  link.stall_since = link.queue_head >= 0 ? link.free_ps : kNever;
}

void Network::advanceTo(uint64_t time_ps) {
  if (time_ps < m_now_ps) throw Error(ErrorKind::kInternal, "ICI: the network cannot go back in time");
  while (!m_heap.empty() && m_heap.front().time_ps <= time_ps) {
    std::pop_heap(m_heap.begin(), m_heap.end(), std::greater<>());
    const Event event = m_heap.back();
    m_heap.pop_back();
    m_now_ps = std::max(m_now_ps, event.time_ps);
    hop(event);
  }
  m_now_ps = time_ps != kNever ? time_ps : std::max(m_now_ps, m_makespan_ps);
}

void Network::run() {
  advanceTo(kNever);
  for (const Transfer& t : m_transfers) {
    if (t.state == State::kWaiting) throw Error(ErrorKind::kInternal, "ICI: a transfer never became ready");
  }
  for (const Link& link : m_links) {
    if (link.queue_head >= 0) {
      throw Error(ErrorKind::kUnsupported,
                  "ICI: credit deadlock: packets wait for buffers that never drain (the packet mode has no escape "
                  "buffer; use the message mode or larger ici.buffer_bytes)");
    }
  }
}

GroupId Network::openGroup() {
  if (m_open_group >= 0) throw Error(ErrorKind::kInternal, "ICI: a transfer group is already open");
  m_groups.emplace_back();
  m_open_group = static_cast<GroupId>(m_groups.size() - 1);
  return m_open_group;
}

void Network::closeGroup() {
  if (m_open_group < 0) throw Error(ErrorKind::kInternal, "ICI: no transfer group is open");
  Group& group = m_groups[m_open_group];
  group.open = false;
  if (group.outstanding == 0) {
    group.done_ps = std::max(group.done_ps, m_now_ps);
    m_finished_groups.push_back(m_open_group);
  }
  m_open_group = -1;
}

void Network::finishInGroup(GroupId id, uint64_t done_ps) {
  Group& group = m_groups[id];
  group.done_ps = std::max(group.done_ps, done_ps);
  if (--group.outstanding == 0 && !group.open) m_finished_groups.push_back(id);
}

std::vector<GroupId> Network::takeFinishedGroups() {
  std::vector<GroupId> finished;
  finished.swap(m_finished_groups);
  return finished;
}

size_t Network::memoryBytes() const {
  return m_transfers.capacity() * sizeof(Transfer) + m_free_transfers.capacity() * sizeof(TransferId) +
         m_edges.capacity() * sizeof(Edge) + m_free_edges.capacity() * sizeof(int32_t) +
         m_links.capacity() * sizeof(Link) + m_heap.capacity() * sizeof(Event) + m_groups.capacity() * sizeof(Group);
}

void Network::registerStats(StatsRegistry& registry, const std::string& prefix) const {
  for (LinkId l = 0; l < m_topology.numLinkSlots(); ++l) {
    const LinkStats& s = m_links[l].stats;
    if (s.messages == 0) continue;
    const std::string name = prefix + "." + m_topology.linkName(l);
    registry.counter(name + ".bytes", "bytes", "bytes sent on this directed ICI link").add(s.bytes);
    registry.counter(name + ".busy_ps", "ps", "time this directed link was serializing").add(s.busy_ps);
    registry.counter(name + ".max_queue_ps", "ps", "longest wait of a message for this link").add(s.max_queue_ps);
    registry.counter(name + ".stalled_ps", "ps", "time this link was held but idle for lack of credit")
        .add(s.stalled_ps);
  }
  for (int host = 0; m_has_dcn && host < m_topology.slices(); ++host) {
    for (const bool up : {true, false}) {
      const LinkStats& s = m_links[up ? dcnUplink(host) : dcnDownlink(host)].stats;
      if (s.messages == 0) continue;
      const std::string name = prefix + ".host" + std::to_string(host) + (up ? ".dcn_up" : ".dcn_down");
      registry.counter(name + ".bytes", "bytes", "bytes sent on this host's DCN NIC link").add(s.bytes);
      registry.counter(name + ".busy_ps", "ps", "time this NIC link was serializing").add(s.busy_ps);
      registry.counter(name + ".max_queue_ps", "ps", "longest wait of a message for this NIC link").add(s.max_queue_ps);
    }
  }
  registerTotals(registry, prefix);
}

void Network::registerTotals(StatsRegistry& registry, const std::string& prefix) const {
  std::vector<LinkStats> links;
  links.reserve(m_links.size());
  for (const Link& link : m_links) links.push_back(link.stats);
  const auto ici = static_cast<size_t>(m_topology.numLinkSlots());
  const std::span<const LinkStats> all(links);
  registerLinkTotals(registry, prefix, m_topology, all.first(ici),
                     m_has_dcn ? std::optional(all.subspan(ici)) : std::nullopt, m_makespan_ps);
}

void registerLinkTotals(StatsRegistry& registry, const std::string& prefix, const Topology& topology,
                        std::span<const LinkStats> links, std::optional<std::span<const LinkStats>> dcn_links,
                        uint64_t makespan_ps) {
  uint64_t bytes = 0, busy = 0, max_queue = 0, stalled = 0;
  for (const LinkStats& s : links) {
    bytes += s.bytes;
    busy += s.busy_ps;
    max_queue = std::max(max_queue, s.max_queue_ps);
    stalled += s.stalled_ps;
  }
  registry.counter(prefix + ".bytes", "bytes", "bytes sent over all ICI links (a byte counts once per hop)").add(bytes);
  registry.counter(prefix + ".busy_ps", "ps", "link serialization time summed over all directed links").add(busy);
  registry.counter(prefix + ".max_queue_ps", "ps", "longest wait of any message for any link").add(max_queue);
  registry.counter(prefix + ".stalled_ps", "ps", "time links were held but idle for lack of credit, summed over links")
      .add(stalled);
  if (dcn_links) {
    uint64_t dcn_bytes = 0, dcn_busy = 0, dcn_queue = 0;
    for (const LinkStats& s : *dcn_links) {
      dcn_bytes += s.bytes;
      dcn_busy += s.busy_ps;
      dcn_queue = std::max(dcn_queue, s.max_queue_ps);
    }
    registry.counter(prefix + ".dcn.bytes", "bytes", "bytes sent over all DCN NIC links (a byte counts on up and down)")
        .add(dcn_bytes);
    registry.counter(prefix + ".dcn.busy_ps", "ps", "NIC link serialization time summed over all hosts").add(dcn_busy);
    registry.counter(prefix + ".dcn.max_queue_ps", "ps", "longest wait of any message for any NIC link").add(dcn_queue);
  }
  registry.counter(prefix + ".makespan_ps", "ps", "when the last transfer delivered its last byte").add(makespan_ps);
  const double link_count = topology.numLinks();
  const double span = static_cast<double>(makespan_ps);
  registry.formula(
      prefix + ".link_utilization", "fraction", "mean busy fraction of the directed links",
      [busy, link_count, span] { return span > 0 ? static_cast<double>(busy) / (link_count * span) : 0.0; });
}

}  // namespace tpusim
