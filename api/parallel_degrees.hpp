// The data-, tensor- and pipeline-parallel degrees of a run on an ICI slice
// (--dp, --tp, --pp; docs/strategies.md, "Tensor and pipeline parallelism").
#pragma once

#include <cstdint>
#include <optional>

#include "api/session.hpp"

namespace tpusim {

struct ParallelDegrees {
  int64_t dp = 1;
  int64_t tp = 1;
  int64_t pp = 1;
};

// The request's degrees over `slice` (none: one chip). Each degree is >= 1 (dp 0: the
// chips the others leave), each divides the slice's chip count, and their product is
// it; otherwise a one-line error (kInvalidConfig). A degree above 1 without a slice is one too.
ParallelDegrees parallelDegreesOf(const RunRequest& request, const std::optional<Topology>& slice);

}  // namespace tpusim
