// How both reference backends time a graph op by op: warm-up runs that are not
// timed, then the median of the timed repeats, per op (the median, not the mean,
// so that one preempted repeat does not move the figure).
#pragma once

#include <cstdint>
#include <vector>

#include "frontend/ir/tensor_value.hpp"

namespace tpusim::reference {

struct TimingOptions {
  int warmup = 1;   // untimed runs of the whole graph first (caches, allocator, clocks)
  int repeats = 5;  // timed runs; each op's time is its median over them
};

struct TimedRun {
  std::vector<ir::TensorValue> values;  // by tensor id, from the last run: every one, or those the executor keeps
  std::vector<double> op_seconds;       // each op's median wall time, in graph order
  uint64_t device_peak_bytes = 0;       // the most device memory in use (CUDA: measured); 0 on the CPU
  std::vector<std::string> op_kernels;  // CUDA: what ran each op, in graph order (cuBLAS, cuDNN, ...); CPU: none
};

// Throws Error (kInvalidConfig) for a negative warm-up or fewer than one repeat.
void checkTimingOptions(const TimingOptions& timing);

// The median of `samples` (the mean of the middle two for an even count); 0 for none.
double medianOf(std::vector<double> samples);

}  // namespace tpusim::reference
