#include "sim/interconnect/replica_groups.hpp"

#include <string>

#include "sim/common/error.hpp"

namespace tpusim {

namespace {

void checkShape(const Topology& topology, int64_t size, int64_t stride) {
  const int64_t chips = topology.numChips();
  if (size < 1 || stride < 1 || chips % (size * stride) != 0) {
    throw Error(ErrorKind::kInvalidInput, "a collective group of " + std::to_string(size) + " chips " +
                                              std::to_string(stride) + " apart does not tile the " +
                                              std::to_string(chips) + "-chip slice " + topology.shapeString());
  }
}

}  // namespace

std::vector<Group> replicaGroups(const Topology& topology, int64_t size, int64_t stride) {
  checkShape(topology, size, stride);
  std::vector<Group> groups;
  const int64_t block = size * stride;  // chips of the groups sharing one set of strides
  for (int64_t base = 0; base < topology.numChips(); base += block) {
    for (int64_t offset = 0; offset < stride; ++offset) {
      Group group;
      for (int64_t k = 0; k < size; ++k) group.push_back(static_cast<ChipId>(base + offset + k * stride));
      groups.push_back(std::move(group));
    }
  }
  return groups;
}

bool isWholeSlice(const Topology& topology, int64_t size, int64_t stride) {
  return size == topology.numChips() && stride == 1;
}

AllReduceAlgorithm groupAlgorithm(const Topology& topology, int64_t size, int64_t stride,
                                  AllReduceAlgorithm configured) {
  checkShape(topology, size, stride);
  if (isWholeSlice(topology, size, stride) || configured != AllReduceAlgorithm::kTorus) return configured;
  return AllReduceAlgorithm::kBidirectionalRing;
}

uint64_t groupReducedBytes(const Topology& topology, int64_t size, int64_t stride, uint64_t bytes,
                           AllReduceAlgorithm configured) {
  const AllReduceAlgorithm algorithm = groupAlgorithm(topology, size, stride, configured);
  if (isWholeSlice(topology, size, stride)) return allReduceReducedBytes(topology, bytes, algorithm, 0);
  // A ring's chunks depend only on the member count: reckon them on a ring of `size`.
  return allReduceReducedBytes(Topology(TopologyKind::kRing, {static_cast<int>(size)}), bytes, algorithm, 0);
}

}  // namespace tpusim
