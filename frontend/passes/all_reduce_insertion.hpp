// Appends summing all-reduces to a graph, each right after the op that produces the
// tensor it reduces (so that the collective can overlap what follows), and makes
// every other reader read the reduced tensor. Shared by the data_parallel pass (weight
// gradients across replicas) and the tensor_parallel pass (partial sums across a group).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "frontend/ir/graph.hpp"

namespace tpusim {

// A group of `replicas` chips, `stride` chip ids apart (frontend/ir/graph.hpp, Op::group_stride).
// Each all-reduce is named after its tensor plus `suffix`; its output takes `role`, or
// the tensor's own role when `role` is nullopt, and the op takes `phase`, or its producer's
// phase when `phase` is nullopt. Every tensor must have a producer.
ir::Graph allReduceAfterProducers(const ir::Graph& graph, std::vector<int> tensors, int64_t replicas, int64_t stride,
                                  const std::string& suffix, std::optional<ir::TensorRole> role,
                                  std::optional<ir::Phase> phase);

}  // namespace tpusim
