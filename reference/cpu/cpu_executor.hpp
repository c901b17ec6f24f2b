// The CPU reference executor: runs an IR graph (forward, or a whole
// training step with backward and SGD) for real, op by op in graph order.
// It is the numerical oracle for the simulator's functional mode.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "frontend/ir/graph.hpp"
#include "frontend/ir/tensor_value.hpp"
#include "reference/cpu/mxu_gemm.hpp"
#include "reference/op_timing.hpp"

namespace tpusim::reference {

struct CpuOptions {
  int threads = 1;  // results do not depend on it
  // Set: matmuls and convolutions are computed as the MXU computes them
  // (mxu_gemm.hpp), for the simulator's functional mode; unset: the reference
  // kernels' own order in the op's dtype.
  std::optional<MxuNumericsOptions> mxu;
};

class CpuExecutor {
 public:
  CpuExecutor(const ir::Graph& graph, CpuOptions options);

  // `feeds` gives a value for every tensor no op produces (inputs, labels,
  // weights), by tensor name, of the tensor's dtype (floating values are rounded
  // to it on entry); returns the value of every tensor, by id.
  std::vector<ir::TensorValue> run(const std::map<std::string, ir::TensorValue>& feeds) const;

  // run(), timed per op (reference/op_timing.hpp): `timing.warmup` untimed runs,
  // then `timing.repeats` timed ones; each op's wall time is its median over the
  // repeats. The values are those of the last run.
  TimedRun runTimed(const std::map<std::string, ir::TensorValue>& feeds, const TimingOptions& timing) const;

 private:
  void runOp(const ir::Op& op, std::vector<ir::TensorValue>& values) const;

  const ir::Graph& m_graph;
  CpuOptions m_options;
};

}  // namespace tpusim::reference
