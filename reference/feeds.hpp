// The values a reference executor is fed, checked against the graph: every tensor no op
// produces needs one, of its shape and dtype. Shared by the CPU and CUDA executors, so
// both refuse a bad feed with the same one-line error.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "frontend/ir/graph.hpp"
#include "frontend/ir/tensor_value.hpp"

namespace tpusim::reference {

// The fed values by tensor id (empty for produced tensors), each rounded to its tensor's
// dtype. Throws Error (kInvalidInput) naming a missing or mismatched feed.
std::vector<ir::TensorValue> boundFeeds(const ir::Graph& graph, const std::map<std::string, ir::TensorValue>& feeds);

}  // namespace tpusim::reference
