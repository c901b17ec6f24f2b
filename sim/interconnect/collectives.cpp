#include "sim/interconnect/collectives.hpp"

#include <algorithm>
#include <string>

#include "sim/common/error.hpp"

namespace tpusim {

namespace {

// What each member must have received before its next send, by member index.
using Ready = std::vector<std::vector<TransferId>>;

// Chunk `index` of `bytes` cut into `parts`: the first bytes % parts chunks get one byte more.
uint64_t chunkBytes(uint64_t bytes, uint64_t parts, uint64_t index) {
  return bytes / parts + (index < bytes % parts ? 1 : 0);
}

// A ring phase's chunk: the buffer is padded to a multiple of the ring's size, so every
// member sends the same bytes at every step (and every member of a slice's rings the same
// schedule: the symmetry sim/interconnect/symmetry.hpp uses).
uint64_t ringChunkBytes(uint64_t bytes, uint64_t parts) {
  return (bytes + parts - 1) / parts;
}

void checkGroup(const TransferSink& network, const Group& group, const char* what) {
  if (group.empty()) throw Error(ErrorKind::kInvalidInput, std::string(what) + " over an empty group of chips");
  const int chips = network.topology().numChips();
  std::vector<bool> seen(chips, false);
  for (ChipId c : group) {
    if (c < 0 || c >= chips) {
      throw Error(ErrorKind::kInvalidInput, std::string(what) + ": chip " + std::to_string(c) +
                                                " is not in the topology (chips 0.." + std::to_string(chips - 1) + ")");
    }
    if (seen[c])
      throw Error(ErrorKind::kInvalidInput,
                  std::string(what) + ": chip " + std::to_string(c) + " appears twice in the group");
    seen[c] = true;
  }
}

struct RingPhase {
  const std::vector<int>* ring;  // member indices, in ring order
  uint64_t bytes;                // the buffer the phase scatters or gathers
  int dir;                       // +1: member i sends to i+1; -1: to i-1
  bool reduce;                   // reduce-scatter (the receiver adds) or all-gather
};

// p - 1 steps; at each, every ring member sends one chunk to its successor.
// start[m] gates member m's sends; on return end[m] holds its last receipt.
void ringSteps(TransferSink& network, const Group& group, const RingPhase& phase, const Ready& start, Ready& end,
               Collective& out, std::vector<uint64_t>& reduced_bytes) {
  const std::vector<int>& ring = *phase.ring;
  const auto p = static_cast<int64_t>(ring.size());
  if (p < 2) return;
  std::vector<TransferId> last_in(p, -1);  // by ring position
  std::vector<TransferId> next_in(p, -1);
  std::vector<TransferId> deps;
  for (int64_t s = 0; s < p - 1; ++s) {
    for (int64_t i = 0; i < p; ++i) {
      const int64_t to = ((i + phase.dir) % p + p) % p;
      // RS: position i sends chunk i - dir*s; AG: the chunk it owns, i + dir, then what it received.
      const uint64_t bytes = ringChunkBytes(phase.bytes, p);
      deps = start[ring[i]];
      if (last_in[i] >= 0) deps.push_back(last_in[i]);
      const TransferId id = network.addTransfer(group[ring[i]], group[ring[to]], bytes, deps, 0, phase.dir);
      out.transfers.push_back(id);
      next_in[to] = id;
      if (phase.reduce) reduced_bytes[ring[to]] += bytes;
    }
    std::swap(last_in, next_in);
  }
  for (int64_t i = 0; i < p; ++i) end[ring[i]].push_back(last_in[i]);
}

// One phase over `ring`, on one direction or split over both.
void ringPhase(TransferSink& network, const Group& group, const std::vector<int>& ring, uint64_t bytes, bool reduce,
               bool bidirectional, const Ready& start, Ready& end, Collective& out,
               std::vector<uint64_t>& reduced_bytes) {
  if (!bidirectional) {
    ringSteps(network, group, {&ring, bytes, 1, reduce}, start, end, out, reduced_bytes);
    return;
  }
  ringSteps(network, group, {&ring, bytes - bytes / 2, 1, reduce}, start, end, out, reduced_bytes);
  ringSteps(network, group, {&ring, bytes / 2, -1, reduce}, start, end, out, reduced_bytes);
}

std::vector<int> listOrder(size_t p) {
  std::vector<int> ring(p);
  for (size_t i = 0; i < p; ++i) ring[i] = static_cast<int>(i);
  return ring;
}

Collective finish(Collective out, const std::vector<uint64_t>& reduced_bytes, uint32_t element_bytes) {
  out.elements_reduced.resize(reduced_bytes.size());
  for (size_t i = 0; i < reduced_bytes.size(); ++i) out.elements_reduced[i] = reduced_bytes[i] / element_bytes;
  return out;
}

void checkElementBytes(uint32_t element_bytes) {
  if (element_bytes == 0) throw Error(ErrorKind::kInvalidInput, "collective element size must be at least 1 byte");
}

// The dimensions of size >= 2 and the buffer each one's phase works on: it
// shrinks n_{d+1} = ceil(n_d / p_d); `scattered` is what each chip owns at the end.
struct TorusPlan {
  std::vector<int> dims;
  std::vector<uint64_t> sizes;
  uint64_t scattered = 0;
};

TorusPlan torusPlan(const Topology& topo, uint64_t bytes) {
  TorusPlan plan;
  uint64_t size = bytes;
  for (int d = 0; d < kDims; ++d) {
    if (topo.dim(d) < 2) continue;
    plan.dims.push_back(d);
    plan.sizes.push_back(size);
    size = (size + topo.dim(d) - 1) / topo.dim(d);
  }
  plan.scattered = size;
  return plan;
}

// One phase along d on every line of every slice: the chips that differ only in
// coordinate d (straight lines, also on the twisted torus, where their ring
// closes over k - 1 hops). Members are chip ids (the group is allChips).
void linePhase(TransferSink& network, const Group& group, int d, uint64_t bytes, bool reduce, Ready& ready,
               Collective& out, std::vector<uint64_t>& reduced) {
  const Topology& topo = network.topology();
  Ready end(group.size());
  std::vector<int> line(topo.dim(d));
  for (ChipId c = 0; c < topo.numChips(); ++c) {
    Coords at = topo.coords(c);
    if (at[d] != 0) continue;
    for (int i = 0; i < topo.dim(d); ++i) {
      at[d] = i;
      line[i] = topo.chipAt(at, topo.sliceOf(c));
    }
    ringPhase(network, group, line, bytes, reduce, true, ready, end, out, reduced);
  }
  ready = std::move(end);
}

void checkWholeTopology(const Topology& topo, const Group& group, const char* what) {
  if (group != allChips(topo)) {
    throw Error(ErrorKind::kUnsupported,
                std::string(what) + " needs the whole topology, in chip-id order, as its group");
  }
}

Collective torusAllReduce(TransferSink& network, const Group& group, uint64_t bytes, uint32_t element_bytes) {
  const Topology& topo = network.topology();
  checkWholeTopology(topo, group, "torus all-reduce");
  if (topo.slices() > 1) {
    throw Error(ErrorKind::kUnsupported, "torus all-reduce runs on one slice; across " + std::to_string(topo.slices()) +
                                             " slices use the hierarchical one");
  }
  Collective out;
  std::vector<uint64_t> reduced(group.size(), 0);
  Ready ready(group.size());
  const TorusPlan plan = torusPlan(topo, bytes);
  for (size_t i = 0; i < plan.dims.size(); ++i)
    linePhase(network, group, plan.dims[i], plan.sizes[i], true, ready, out, reduced);
  for (size_t i = plan.dims.size(); i-- > 0;)
    linePhase(network, group, plan.dims[i], plan.sizes[i], false, ready, out, reduced);
  return finish(std::move(out), reduced, element_bytes);
}

// Reduce-scatter over each slice's torus, a ring all-reduce of each chip's share
// across the slices over the DCN (chip i of every host forms one ring, so each
// host's NIC carries all its chips' shares), then all-gather over the torus.
Collective hierarchicalAllReduce(TransferSink& network, const Group& group, uint64_t bytes, uint32_t element_bytes) {
  const Topology& topo = network.topology();
  checkWholeTopology(topo, group, "hierarchical all-reduce");
  const int hosts = topo.slices();
  if (hosts > 1 && !network.hasDcn()) {
    throw Error(ErrorKind::kInvalidConfig,
                "hierarchical all-reduce over " + std::to_string(hosts) + " hosts needs a network with the DCN");
  }
  Collective out;
  std::vector<uint64_t> reduced(group.size(), 0);
  Ready ready(group.size());
  const TorusPlan plan = torusPlan(topo, bytes);
  for (size_t i = 0; i < plan.dims.size(); ++i)
    linePhase(network, group, plan.dims[i], plan.sizes[i], true, ready, out, reduced);
  const int per_host = topo.chipsPerSlice();
  std::vector<int> lane(hosts);
  for (int local = 0; hosts > 1 && local < per_host; ++local) {
    for (int h = 0; h < hosts; ++h) lane[h] = h * per_host + local;
    Ready scattered(group.size()), gathered(group.size());
    ringPhase(network, group, lane, plan.scattered, true, false, ready, scattered, out, reduced);
    ringPhase(network, group, lane, plan.scattered, false, false, scattered, gathered, out, reduced);
    for (int h = 0; h < hosts; ++h) ready[lane[h]] = std::move(gathered[lane[h]]);
  }
  for (size_t i = plan.dims.size(); i-- > 0;)
    linePhase(network, group, plan.dims[i], plan.sizes[i], false, ready, out, reduced);
  return finish(std::move(out), reduced, element_bytes);
}

// What a ring member reduces in one reduce-scatter over `bytes`: every chunk but the one
// it ends up owning.
uint64_t ringReducedBytes(uint64_t bytes, uint64_t p) {
  return p < 2 ? 0 : (p - 1) * ringChunkBytes(bytes, p);
}

uint64_t bidirectionalReducedBytes(uint64_t bytes, uint64_t p) {
  return ringReducedBytes(bytes - bytes / 2, p) + ringReducedBytes(bytes / 2, p);
}

}  // namespace

AllReduceAlgorithm allReduceAlgorithmFromName(const std::string& name) {
  if (name == "torus") return AllReduceAlgorithm::kTorus;
  if (name == "bidirectional_ring") return AllReduceAlgorithm::kBidirectionalRing;
  if (name == "ring") return AllReduceAlgorithm::kRing;
  if (name == "hierarchical") return AllReduceAlgorithm::kHierarchical;
  throw Error(ErrorKind::kInvalidConfig,
              "unknown all-reduce algorithm '" + name + "' (torus, bidirectional_ring, ring, hierarchical)");
}

const char* allReduceAlgorithmName(AllReduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllReduceAlgorithm::kTorus: return "torus";
    case AllReduceAlgorithm::kBidirectionalRing: return "bidirectional_ring";
    case AllReduceAlgorithm::kRing: return "ring";
    case AllReduceAlgorithm::kHierarchical: return "hierarchical";
  }
  return "?";
}

uint64_t allReduceReducedBytes(const Topology& topology, uint64_t bytes, AllReduceAlgorithm algorithm, ChipId member) {
  const auto p = static_cast<uint64_t>(topology.numChips());
  if (member < 0 || static_cast<uint64_t>(member) >= p) {
    throw Error(ErrorKind::kInternal, "all-reduce: member outside the topology");
  }
  switch (algorithm) {
    case AllReduceAlgorithm::kRing: return ringReducedBytes(bytes, p);
    case AllReduceAlgorithm::kBidirectionalRing: return bidirectionalReducedBytes(bytes, p);
    case AllReduceAlgorithm::kTorus:
    case AllReduceAlgorithm::kHierarchical: break;
  }
  uint64_t reduced = 0;
  uint64_t size = bytes;
  for (int d = 0; d < kDims; ++d) {
    const auto line = static_cast<uint64_t>(topology.dim(d));
    if (line < 2) continue;
    reduced += bidirectionalReducedBytes(size, line);
    size = (size + line - 1) / line;
  }
  if (algorithm == AllReduceAlgorithm::kHierarchical) {  // the DCN ring over hosts, on the chip's share
    reduced += ringReducedBytes(size, static_cast<uint64_t>(topology.slices()));
  }
  return reduced;
}

uint64_t Collective::finishTime(const Network& network) const {
  uint64_t t = 0;
  for (TransferId id : transfers) t = std::max(t, network.doneTime(id));
  return t;
}

Group allChips(const Topology& topology) {
  Group group(topology.numChips());
  for (int i = 0; i < topology.numChips(); ++i) group[i] = i;
  return group;
}

Collective allReduce(TransferSink& network, const Group& group, uint64_t bytes, AllReduceAlgorithm algorithm,
                     uint32_t element_bytes) {
  checkGroup(network, group, "all-reduce");
  checkElementBytes(element_bytes);
  if (algorithm == AllReduceAlgorithm::kTorus) return torusAllReduce(network, group, bytes, element_bytes);
  if (algorithm == AllReduceAlgorithm::kHierarchical) {
    return hierarchicalAllReduce(network, group, bytes, element_bytes);
  }
  const bool bidirectional = algorithm == AllReduceAlgorithm::kBidirectionalRing;
  const std::vector<int> ring = listOrder(group.size());
  Collective out;
  std::vector<uint64_t> reduced(group.size(), 0);
  Ready none(group.size()), scattered(group.size()), gathered(group.size());
  ringPhase(network, group, ring, bytes, true, bidirectional, none, scattered, out, reduced);
  ringPhase(network, group, ring, bytes, false, bidirectional, scattered, gathered, out, reduced);
  return finish(std::move(out), reduced, element_bytes);
}

Collective reduceScatter(TransferSink& network, const Group& group, uint64_t bytes, bool bidirectional,
                         uint32_t element_bytes) {
  checkGroup(network, group, "reduce-scatter");
  checkElementBytes(element_bytes);
  Collective out;
  std::vector<uint64_t> reduced(group.size(), 0);
  Ready none(group.size()), end(group.size());
  ringPhase(network, group, listOrder(group.size()), bytes, true, bidirectional, none, end, out, reduced);
  return finish(std::move(out), reduced, element_bytes);
}

Collective allGather(TransferSink& network, const Group& group, uint64_t bytes, bool bidirectional) {
  checkGroup(network, group, "all-gather");
  Collective out;
  std::vector<uint64_t> reduced(group.size(), 0);
  Ready none(group.size()), end(group.size());
  ringPhase(network, group, listOrder(group.size()), bytes, false, bidirectional, none, end, out, reduced);
  return finish(std::move(out), reduced, 1);
}

Collective allToAll(TransferSink& network, const Group& group, uint64_t bytes) {
  checkGroup(network, group, "all-to-all");
  const uint64_t p = group.size();
  Collective out;
  for (uint64_t i = 0; i < p; ++i) {
    for (uint64_t j = 0; j < p; ++j) {
      if (i != j) out.transfers.push_back(network.addTransfer(group[i], group[j], chunkBytes(bytes, p, j)));
    }
  }
  out.elements_reduced.assign(p, 0);
  return out;
}

Collective broadcast(TransferSink& network, const Group& group, uint64_t bytes, uint32_t chunks) {
  checkGroup(network, group, "broadcast");
  if (chunks == 0) throw Error(ErrorKind::kInvalidInput, "broadcast needs at least one chunk");
  Collective out;
  std::vector<TransferId> into(chunks, -1);  // chunk j's receipt at the previous member
  for (size_t m = 1; m < group.size(); ++m) {
    for (uint32_t j = 0; j < chunks; ++j) {
      std::vector<TransferId> deps;
      if (into[j] >= 0) deps.push_back(into[j]);
      into[j] = network.addTransfer(group[m - 1], group[m], chunkBytes(bytes, chunks, j), deps);
      out.transfers.push_back(into[j]);
    }
  }
  out.elements_reduced.assign(group.size(), 0);
  return out;
}

Collective sendRecv(TransferSink& network, ChipId src, ChipId dst, uint64_t bytes) {
  checkGroup(network, {src, dst}, "send/recv");
  Collective out;
  out.transfers.push_back(network.addTransfer(src, dst, bytes));
  out.elements_reduced.assign(2, 0);
  return out;
}

}  // namespace tpusim
