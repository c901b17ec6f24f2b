// What the CUDA executor runs: every op is checked before a device is touched, so a
// graph it cannot run is refused with one line naming the op (docs/reference.md).
#pragma once

#include <string>

#include "frontend/ir/graph.hpp"
#include "reference/cuda/kernels/element.hpp"

namespace tpusim::reference::cuda {

// How a tensor of `dtype` is held on the device; throws Error (kUnsupported) for f64.
Elem elemOf(DType dtype);

// Why the executor cannot run `op`, or "" when it can, in a data-parallel step of `replicas`.
std::string unsupportedReason(const ir::Graph& graph, const ir::Op& op, int64_t replicas);

}  // namespace tpusim::reference::cuda
