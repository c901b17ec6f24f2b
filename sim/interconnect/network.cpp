#include "sim/interconnect/network.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

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
  m_links.resize(topology.numLinkSlots());
}

uint64_t Network::serializationPs(uint64_t bytes) const {
  return static_cast<uint64_t>(std::ceil(static_cast<double>(bytes) * m_ps_per_byte));
}

TransferId Network::addTransfer(ChipId src, ChipId dst, uint64_t bytes, std::span<const TransferId> deps,
                                uint64_t earliest_ps) {
  if (m_ran) throw Error(ErrorKind::kInternal, "ICI: transfer added after the network ran");
  const int chips = m_topology.numChips();
  if (src < 0 || src >= chips || dst < 0 || dst >= chips) {
    throw Error(ErrorKind::kInvalidInput, "ICI transfer chip" + std::to_string(src) + " -> chip" + std::to_string(dst) +
                                              ": the topology has chips 0.." + std::to_string(chips - 1));
  }
  if (m_granularity == Granularity::kMessage || src == dst || bytes <= m_config.packet_bytes) {
    return addUnit(src, dst, bytes, deps, earliest_ps);
  }
  std::vector<TransferId> packets;
  for (uint64_t sent = 0; sent < bytes; sent += m_config.packet_bytes) {
    packets.push_back(addUnit(src, dst, std::min(m_config.packet_bytes, bytes - sent), deps, earliest_ps));
  }
  return addUnit(dst, dst, 0, packets, earliest_ps);  // the join: done when the last packet is
}

TransferId Network::addUnit(ChipId src, ChipId dst, uint64_t bytes, std::span<const TransferId> deps,
                            uint64_t earliest_ps) {
  const auto id = static_cast<TransferId>(m_transfers.size());
  Transfer t{src, dst, src, bytes, earliest_ps};
  t.ser_all_ps = serializationPs(bytes);
  t.ser_head_ps = serializationPs(std::min(bytes, m_config.packet_bytes));
  t.hops_left = minimalHops(m_topology, src, dst).hops;
  for (TransferId dep : deps) {
    if (dep < 0 || dep >= id) throw Error(ErrorKind::kInternal, "ICI: a transfer depends on one not added before it");
    m_edges.emplace_back(dep, id);
    ++t.pending_deps;
  }
  m_transfers.push_back(t);
  return id;
}

int Network::chooseDimension(const Transfer& t) const {
  int best = -1;
  uint64_t best_free = 0;
  for (int d = 0; d < kDims; ++d) {
    if (t.hops_left[d] == 0) continue;
    if (m_routing == RoutingMode::kDimensionOrder) return d;
    const uint64_t free = m_links[Topology::linkId(t.at, d, t.hops_left[d] > 0 ? 1 : -1)].free_ps;
    if (best < 0 || free < best_free) {
      best = d;
      best_free = free;
    }
  }
  return best;
}

void Network::launch(TransferId id, std::vector<Event>& heap) {
  Transfer& t = m_transfers[id];
  if (t.src == t.dst) {
    t.done_ps = t.ready_ps;  // a local copy: no link time
    complete(id, heap);
    return;
  }
  heap.push_back({t.ready_ps + m_router_ps, id});
  std::push_heap(heap.begin(), heap.end(), std::greater<>());
}

void Network::complete(TransferId id, std::vector<Event>& heap) {
  // Iterative: local copies can chain without bounding the recursion depth.
  std::vector<TransferId> stack{id};
  while (!stack.empty()) {
    const TransferId done = stack.back();
    stack.pop_back();
    const uint64_t done_ps = m_transfers[done].done_ps;
    m_makespan_ps = std::max(m_makespan_ps, done_ps);
    for (uint32_t e = m_dependents_begin[done]; e < m_dependents_begin[done + 1]; ++e) {
      Transfer& next = m_transfers[m_dependents[e]];
      next.ready_ps = std::max(next.ready_ps, done_ps);
      if (--next.pending_deps > 0) continue;
      if (next.src == next.dst) {
        next.done_ps = next.ready_ps;
        stack.push_back(m_dependents[e]);
      } else {
        heap.push_back({next.ready_ps + m_router_ps, m_dependents[e]});
        std::push_heap(heap.begin(), heap.end(), std::greater<>());
      }
    }
  }
}

void Network::hop(const Event& event, std::vector<Event>& heap) {
  Transfer& t = m_transfers[event.id];
  const int d = chooseDimension(t);
  const int dir = t.hops_left[d] > 0 ? 1 : -1;
  Link& link = m_links[Topology::linkId(t.at, d, dir)];
  const uint64_t start = std::max(event.time_ps, link.free_ps);
  link.free_ps = start + t.ser_all_ps;
  link.stats.bytes += t.bytes;
  link.stats.messages += 1;
  link.stats.busy_ps += t.ser_all_ps;
  link.stats.max_queue_ps = std::max(link.stats.max_queue_ps, start - event.time_ps);
  ++m_hops;
  t.hops_left[d] -= dir;
  t.at = m_topology.neighbor(t.at, d, dir);
  if (t.hops_left[0] == 0 && t.hops_left[1] == 0 && t.hops_left[2] == 0) {
    if (t.at != t.dst) throw Error(ErrorKind::kInternal, "ICI: a transfer arrived at the wrong chip");
    t.done_ps = start + t.ser_all_ps + m_wire_ps;
    complete(event.id, heap);
    return;
  }
  heap.push_back({start + t.ser_head_ps + m_wire_ps + m_router_ps, event.id});
  std::push_heap(heap.begin(), heap.end(), std::greater<>());
}

void Network::run() {
  if (m_ran) throw Error(ErrorKind::kInternal, "ICI: the network ran twice");
  m_ran = true;
  // Dependents as CSR, in the order the edges were added (deterministic).
  const size_t n = m_transfers.size();
  m_dependents_begin.assign(n + 1, 0);
  for (const auto& [dep, id] : m_edges) ++m_dependents_begin[dep + 1];
  for (size_t i = 0; i < n; ++i) m_dependents_begin[i + 1] += m_dependents_begin[i];
  m_dependents.resize(m_edges.size());
  std::vector<uint32_t> fill(m_dependents_begin.begin(), m_dependents_begin.end() - 1);
  for (const auto& [dep, id] : m_edges) m_dependents[fill[dep]++] = id;
  m_edges.clear();
  m_edges.shrink_to_fit();

  std::vector<Event> heap;
  heap.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (m_transfers[i].pending_deps == 0) launch(static_cast<TransferId>(i), heap);
  }
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    const Event event = heap.back();
    heap.pop_back();
    hop(event, heap);
  }
  for (const Transfer& t : m_transfers) {
    if (t.pending_deps > 0) throw Error(ErrorKind::kInternal, "ICI: a transfer never became ready");
  }
}

void Network::registerStats(StatsRegistry& registry, const std::string& prefix) const {
  uint64_t bytes = 0, busy = 0, max_queue = 0;
  for (LinkId l = 0; l < m_topology.numLinkSlots(); ++l) {
    const LinkStats& s = m_links[l].stats;
    if (s.messages == 0) continue;
    const std::string name = prefix + "." + m_topology.linkName(l);
    registry.counter(name + ".bytes", "bytes", "bytes sent on this directed ICI link").add(s.bytes);
    registry.counter(name + ".busy_ps", "ps", "time this directed link was serializing").add(s.busy_ps);
    registry.counter(name + ".max_queue_ps", "ps", "longest wait of a message for this link").add(s.max_queue_ps);
    bytes += s.bytes;
    busy += s.busy_ps;
    max_queue = std::max(max_queue, s.max_queue_ps);
  }
  registry.counter(prefix + ".bytes", "bytes", "bytes sent over all ICI links (a byte counts once per hop)").add(bytes);
  registry.counter(prefix + ".busy_ps", "ps", "link serialization time summed over all directed links").add(busy);
  registry.counter(prefix + ".max_queue_ps", "ps", "longest wait of any message for any link").add(max_queue);
  registry.counter(prefix + ".makespan_ps", "ps", "when the last transfer delivered its last byte").add(m_makespan_ps);
  const double links = m_topology.numLinks();
  const double span = static_cast<double>(m_makespan_ps);
  registry.formula(prefix + ".link_utilization", "fraction", "mean busy fraction of the directed links",
                   [busy, links, span] { return span > 0 ? static_cast<double>(busy) / (links * span) : 0.0; });
}

}  // namespace tpusim
