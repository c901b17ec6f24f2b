// Groups of chips that run one collective together (Collective.replicas and
// .group_stride in traces/program.proto): `size` chips `stride` ids apart. With
// tensor parallelism of degree T over a slice, the tensor-parallel groups are T
// consecutive chips (stride 1: along x, the innermost dimension, so their traffic stays
// on neighbouring links when T divides x) and the data-parallel groups take one chip
// of each (stride T). Every chip is in exactly one group of a given shape, so a
// collective started by chip 0's group runs in all of them at once.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/interconnect/collectives.hpp"
#include "sim/interconnect/topology.hpp"

namespace tpusim {

// The groups of `size` chips `stride` apart that partition the slice, each in member
// order, listed by their first member. A shape that does not tile the slice
// (size x stride not dividing its chip count) is a one-line error.
std::vector<Group> replicaGroups(const Topology& topology, int64_t size, int64_t stride);

// Whether the group is the whole slice in chip-id order (where the torus algorithm applies).
bool isWholeSlice(const Topology& topology, int64_t size, int64_t stride);

// The algorithm a group runs: `configured` for the whole slice; a smaller group runs the
// torus algorithm's rings as one bidirectional ring in member order.
AllReduceAlgorithm groupAlgorithm(const Topology& topology, int64_t size, int64_t stride,
                                  AllReduceAlgorithm configured);

// The bytes each member adds in an all-reduce of `bytes` over such a group, from the
// closed form of the group's algorithm (allReduceReducedBytes).
uint64_t groupReducedBytes(const Topology& topology, int64_t size, int64_t stride, uint64_t bytes,
                           AllReduceAlgorithm configured);

}  // namespace tpusim
