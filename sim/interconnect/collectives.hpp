// Collectives decomposed into ICI link transfers (docs/interconnect.md,
// "Collectives", where each algorithm's alpha-beta closed form is written).
//
// Each function adds the transfers of one collective to a Network, with their
// dependencies, and returns their ids; the caller runs the network (several
// collectives added to one network share its links) and reads finishTime().
// A group is a list of chips; ring algorithms form the ring in list order, and
// consecutive members that are not neighbours are routed over several hops.
// Byte counts are per chip: `bytes` is each chip's buffer (for all-gather the
// gathered output, for reduce-scatter the input); uneven splits differ by at
// most one byte between chunks. Reductions are not timed here: each chip's
// element count is returned so the caller can charge it as VPU work.
#pragma once

#include <cstdint>
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
};

// The whole topology in chip-id order: the group kTorus needs.
Group allChips(const Topology& topology);

Collective allReduce(Network& network, const Group& group, uint64_t bytes, AllReduceAlgorithm algorithm,
                     uint32_t element_bytes = 4);
Collective reduceScatter(Network& network, const Group& group, uint64_t bytes, bool bidirectional = false,
                         uint32_t element_bytes = 4);
Collective allGather(Network& network, const Group& group, uint64_t bytes, bool bidirectional = false);
// Every member sends bytes / p to every other member, all at once, routed.
Collective allToAll(Network& network, const Group& group, uint64_t bytes);
// group[0] sends to the rest along the list, the buffer cut into `chunks`
// pieces that are forwarded as they arrive (a pipelined chain).
Collective broadcast(Network& network, const Group& group, uint64_t bytes, uint32_t chunks = 1);
Collective sendRecv(Network& network, ChipId src, ChipId dst, uint64_t bytes);

}  // namespace tpusim
