// Graphs of every op family the CUDA executor runs, with their feeds: run on the host
// device bit for bit against the CPU executor (cuda_host_device_test.cpp) and on a GPU
// within a bound of it (cuda_executor_test.cpp).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "frontend/ir/graph.hpp"
#include "frontend/ir/tensor_value.hpp"

namespace tpusim::reference {

using Feeds = std::map<std::string, ir::TensorValue>;

struct OpCase {
  std::string name;
  ir::Graph graph;
  Feeds feeds;
};

// Elementwise ops, unary ops, casts, data movement, reductions, losses, convolutions and
// pools (f32, bf16; 1 to 3 spatial dimensions), bf16 and f16 MatMuls, the training steps of
// traces/mlp.onnx under every optimizer and precision policy, and traces/dlrm.onnx's (made-up
// weights; its embedding ids are computed in the step).
std::vector<OpCase> cudaOpCases();

// Random values for every fed tensor of `graph` (integer ones in [low, high)), rounded to their dtypes.
Feeds randomFeeds(const ir::Graph& graph, unsigned seed, double low = -2, double high = 2);

}  // namespace tpusim::reference
