// Where a collective's link transfers go (sim/interconnect/collectives.hpp): the
// network that simulates them, or a TransferPlan that records them so they can be
// checked for symmetry and replayed (sim/interconnect/symmetry.hpp).
#pragma once

#include <cstdint>
#include <span>

#include "sim/interconnect/topology.hpp"

namespace tpusim {

using TransferId = int32_t;

class TransferSink {
 public:
  virtual ~TransferSink() = default;
  // A transfer of `bytes` from src to dst once every dep has delivered, not before
  // earliest_ps; `way` picks the way round a dimension of size 2 (Network::addTransfer).
  // Returns the id later transfers name as a dep.
  virtual TransferId addTransfer(ChipId src, ChipId dst, uint64_t bytes, std::span<const TransferId> deps = {},
                                 uint64_t earliest_ps = 0, int way = 0) = 0;
  virtual const Topology& topology() const = 0;
  // Whether the topology's slices are joined by the DCN.
  virtual bool hasDcn() const = 0;
};

}  // namespace tpusim
