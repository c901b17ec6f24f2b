// Closed-form cycle count of a matmul on one weight-stationary systolic array
// with double-buffered weight registers (docs/mxu.md derives it).
//
// out[M, N] = lhs[M, K] x rhs[K, N] on an array of R rows x C columns runs
// as F = ceil(K / R) * ceil(N / C) folds; each fold holds one R x C tile of
// rhs in the array while all M lhs rows stream through.
//   load the first tile:                 R cycles (one array row per cycle)
//   each fold but the last streams M rows, but cannot be shorter than the
//   next tile's weight load, which it hides: max(M, R) cycles
//   the last fold streams M rows, then the wavefront fills the R rows and
//   drains through the C columns:       M + R + C - 2 cycles
//   total = R + (F - 1) * max(M, R) + M + R + C - 2
#pragma once

#include <cstdint>

namespace tpusim {

struct MxuShape {
  uint64_t rows;
  uint64_t cols;
};

struct WsTiming {
  uint64_t folds;
  uint64_t cycles;
  uint64_t macs;  // useful multiply-accumulates, M * K * N
};

// m, k, n >= 1; an empty matmul is rejected by the Program validator.
WsTiming weightStationaryTiming(uint64_t m, uint64_t k, uint64_t n, MxuShape array);

}  // namespace tpusim
