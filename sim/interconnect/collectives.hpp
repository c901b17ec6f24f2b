// Collectives decomposed into ICI link transfers (docs/interconnect.md,
// "Collectives", where each algorithm's alpha-beta closed form is written).
//
// Each function adds the transfers of one collective to a Network (or records them in
// a TransferPlan, sim/interconnect/transfer_plan.hpp), with their dependencies, and returns their ids; the caller runs
// the network (several collectives added to one network share its links) and reads finishTime(). A group is a list of
// chips; ring algorithms form the ring in list order, and consecutive members that are not neighbours are routed over
// several hops. Byte counts are per chip: `bytes` is each chip's buffer (for all-gather the gathered output, for
// reduce-scatter the input). A ring phase pads its buffer to a multiple of the ring's size, so every chunk is
// ceil(bytes / p) (at most p - 1 bytes of padding); all-to-all and broadcast chunks differ by at most one byte.
// Reductions are not timed here: each chip's element count is returned so the caller can charge it as VPU work.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/interconnect/network.hpp"

namespace tpusim {

using Group = std::vector<ChipId>;

struct Collective {
  std::vector<TransferId> transfers;
  // Elements each member reduces (adds into its buffer), in group order.
  std::vector<uint64_t> elements_reduced;
  // After Network::run(): when the last of its transfers delivered (0 if none).
  uint64_t finishTime(const Network& network) const;
};

enum class AllReduceAlgorithm {
  kRing,               // reduce-scatter then all-gather on one ring: 2(p-1) steps of n/p
  kBidirectionalRing,  // the same on both directions of the ring, n/2 each
  kTorus,              // dimension by dimension, bidirectional rings along each line
  // Multi-host (sim/interconnect/dcn.hpp): torus reduce-scatter in each host's slice,
  // a ring all-reduce of each chip's share across the hosts over the DCN, torus all-gather.
  kHierarchical,
};

// "torus", "bidirectional_ring", "ring" (ici.all_reduce_algorithm) or "hierarchical";
// anything else is a one-line error.
AllReduceAlgorithm allReduceAlgorithmFromName(const std::string& name);
const char* allReduceAlgorithmName(AllReduceAlgorithm algorithm);

// The whole topology in chip-id order: the group kTorus and kHierarchical need.
Group allChips(const Topology& topology);

Collective allReduce(TransferSink& network, const Group& group, uint64_t bytes, AllReduceAlgorithm algorithm,
                     uint32_t element_bytes = 4);
// The bytes `member` adds into its buffer in allReduce(network, allChips(topology), bytes,
// algorithm), from the closed form of the algorithm's chunks, without building the
// transfers (the compiler charges them to the vector unit): a ring member reduces every
// chunk but its own, on each direction it uses; the torus does so on each dimension's
// line with that dimension's buffer. Equal to elements_reduced[member] x element_bytes
// when element_bytes divides it (tested).
uint64_t allReduceReducedBytes(const Topology& topology, uint64_t bytes, AllReduceAlgorithm algorithm, ChipId member);

Collective reduceScatter(TransferSink& network, const Group& group, uint64_t bytes, bool bidirectional = false,
                         uint32_t element_bytes = 4);
Collective allGather(TransferSink& network, const Group& group, uint64_t bytes, bool bidirectional = false);
// Every member sends bytes / p to every other member, all at once, routed.
Collective allToAll(TransferSink& network, const Group& group, uint64_t bytes);
// group[0] sends to the rest along the list, the buffer cut into `chunks`
// pieces that are forwarded as they arrive (a pipelined chain).
Collective broadcast(TransferSink& network, const Group& group, uint64_t bytes, uint32_t chunks = 1);
Collective sendRecv(TransferSink& network, ChipId src, ChipId dst, uint64_t bytes);

}  // namespace tpusim
