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
#include "reference/tensor_lifetimes.hpp"

namespace tpusim::reference {

// More threads than this is a typo, not a machine.
inline constexpr int kMaxCpuThreads = 1024;

// Throws an invalid-config Error unless 1 <= threads <= kMaxCpuThreads.
void checkCpuThreads(int threads);

struct CpuOptions {
  int threads = 1;  // 1 to kMaxCpuThreads; results do not depend on it
  // Set: matmuls and convolutions are computed as the MXU computes them
  // (mxu_gemm.hpp), for the simulator's functional mode; unset: the reference
  // kernels' own order in the op's dtype.
  std::optional<MxuNumericsOptions> mxu;
};

class CpuExecutor {
 public:
  // `keep`, where given: the tensors (ids) whose values the caller reads after a run; every
  // other value is released after the last op that reads it (tensor_lifetimes.hpp), and a run
  // returns only these (the rest empty). Not given: every value is held to the end and returned.
  CpuExecutor(const ir::Graph& graph, CpuOptions options, const std::optional<std::vector<int>>& keep = std::nullopt);

  // The most bytes of tensor values a run holds at once, each at its dtype's size (the
  // executor itself holds every value as doubles or int64), per replica: every tensor of
  // the step without `keep`, the live set's peak with it.
  uint64_t heldPeakBytes() const { return m_lifetimes.peak_bytes; }

  // `feeds` gives a value for every tensor no op produces (inputs, labels,
  // weights), by tensor name, of the tensor's dtype (floating values are rounded
  // to it on entry); returns the value of every tensor (every kept one), by id.
  std::vector<ir::TensorValue> run(const std::map<std::string, ir::TensorValue>& feeds) const;

  // run(), timed per op (reference/op_timing.hpp): `timing.warmup` untimed runs,
  // then `timing.repeats` timed ones; each op's wall time is its median over the
  // repeats. The values are those of the last run.
  TimedRun runTimed(const std::map<std::string, ir::TensorValue>& feeds, const TimingOptions& timing) const;

  // Every replica of a data-parallel step (frontend/passes/data_parallel.hpp), replica r
  // with feeds[r], op by op in graph order. An AllReduce across them reduces replica 0's
  // input, then replica 1's, and so on (a floating sum in float, rounded to the tensor's
  // dtype once), and every replica reads the result. Returns every tensor's value, by
  // replica, then id.
  std::vector<std::vector<ir::TensorValue>> runReplicas(
      const std::vector<std::map<std::string, ir::TensorValue>>& feeds) const;
  // runReplicas(), timed as runTimed() is: one TimedRun per replica, each op timed on each
  // replica; an AllReduce's time (its reduction) is every replica's.
  std::vector<TimedRun> runTimedReplicas(const std::vector<std::map<std::string, ir::TensorValue>>& feeds,
                                         const TimingOptions& timing) const;

 private:
  using ReplicaValues = std::vector<std::vector<ir::TensorValue>>;  // by replica, then tensor id
  ReplicaValues bound(const std::vector<std::map<std::string, ir::TensorValue>>& feeds) const;
  std::vector<TimedRun> timeReplicas(const ReplicaValues& bound, const TimingOptions& timing) const;
  // `op` on every replica; `seconds`, where given, receives each replica's wall time.
  void runOpOnReplicas(const ir::Op& op, ReplicaValues& values, std::vector<double>* seconds) const;
  void allReduce(const ir::Op& op, ReplicaValues& values) const;  // across every replica
  void runOp(const ir::Op& op, std::vector<ir::TensorValue>& values) const;
  // Runs the graph's ops on every replica, releasing what `m_lifetimes` says as it goes.
  void runOps(ReplicaValues& values, std::vector<std::vector<double>>* op_seconds) const;

  const ir::Graph& m_graph;
  CpuOptions m_options;
  TensorLifetimes m_lifetimes;
};

}  // namespace tpusim::reference
