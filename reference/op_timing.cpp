#include "reference/op_timing.hpp"

#include <algorithm>
#include <string>

#include "sim/common/error.hpp"

namespace tpusim::reference {

void checkTimingOptions(const TimingOptions& timing) {
  if (timing.warmup < 0) {
    throw Error(ErrorKind::kInvalidConfig, "--warmup must be >= 0 (got " + std::to_string(timing.warmup) + ")");
  }
  if (timing.repeats < 1) {
    throw Error(ErrorKind::kInvalidConfig, "--repeats must be >= 1 (got " + std::to_string(timing.repeats) + ")");
  }
}

double medianOf(std::vector<double> samples) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const size_t mid = samples.size() / 2;
  return samples.size() % 2 == 1 ? samples[mid] : (samples[mid - 1] + samples[mid]) / 2;
}

}  // namespace tpusim::reference
