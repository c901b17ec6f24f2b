// One op of the CUDA executor as device calls: its kernels' arguments are worked out
// once, before the timed runs (with any scratch buffer and cuDNN plan the op needs),
// so that a timed run only issues the calls.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "frontend/ir/graph.hpp"
#include "reference/cuda/device.hpp"

namespace tpusim::reference::cuda {

using OpLaunch = std::function<void(Device&)>;

// Where a Gather's or GatherGrad's kernels record an index out of range (their indices may be
// computed on the device, where no check ran before): the slot with the first bad index's
// position (kNoFault: none; never reset, as the run that sets it ends the step), and the
// indices, to read its value back.
struct IndexFault {
  uint64_t* slot = nullptr;  // null: the op has no indices
  Ref indices;
  int64_t length = 0;  // of the indexed dimension
};

struct PlannedOp {
  OpLaunch launch;
  IndexFault fault;
};

// `refs` holds every tensor's device buffer by tensor id; `op` passed unsupportedReason().
PlannedOp planOp(Device& device, const ir::Graph& graph, const ir::Op& op, const std::vector<Ref>& refs);

}  // namespace tpusim::reference::cuda
