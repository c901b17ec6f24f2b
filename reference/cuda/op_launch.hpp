// One op of the CUDA executor as device calls: its kernels' arguments are worked out
// once, before the timed runs (with any scratch buffer and cuDNN plan the op needs),
// so that a timed run only issues the calls.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "frontend/ir/graph.hpp"
#include "reference/cuda/device.hpp"

namespace tpusim::reference::cuda {

using OpLaunch = std::function<void(Device&)>;

// Where an op's kernels record an input they cannot compute with, since a kernel cannot throw:
// a gather's index or a loss's label out of range (either may be computed on the device, where
// no check ran before), an integer Div's zero divisor. The slot holds the first bad element's
// position (kNoFault: none; never reset, as the run that sets it ends the step).
struct KernelFault {
  enum class Kind { kIndex, kLabelOfRow, kLabelAtPosition, kDivisionByZero };
  uint64_t* slot = nullptr;  // null: the op reports nothing
  Kind kind = Kind::kIndex;
  Ref values;          // the indices or labels, to read the bad one back
  int64_t length = 0;  // the indexed dimension's, or the number of classes
};

struct PlannedOp {
  OpLaunch launch;
  KernelFault fault;
  std::string kernel;  // what runs it (report.json's per_op[].kernel): Device::gemmKernel and the like
};

// `refs` holds every tensor's device buffer by tensor id; `op` passed unsupportedReason().
PlannedOp planOp(Device& device, const ir::Graph& graph, const ir::Op& op, const std::vector<Ref>& refs);

}  // namespace tpusim::reference::cuda
