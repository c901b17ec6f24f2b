// One op of the CUDA executor as device calls: its kernels' arguments are worked out
// once, before the timed runs (with any scratch buffer and cuDNN plan the op needs),
// so that a timed run only issues the calls.
#pragma once

#include <functional>
#include <vector>

#include "frontend/ir/graph.hpp"
#include "reference/cuda/device.hpp"

namespace tpusim::reference::cuda {

using OpLaunch = std::function<void(Device&)>;

// `refs` holds every tensor's device buffer by tensor id; `op` passed unsupportedReason().
OpLaunch planOp(Device& device, const ir::Graph& graph, const ir::Op& op, const std::vector<Ref>& refs);

}  // namespace tpusim::reference::cuda
