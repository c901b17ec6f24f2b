// The fast timing mode: the exact cycle count of one matmul instruction on one
// MXU, in closed form. docs/mxu.md derives it from the PE-by-PE model
// (pe_array.hpp), and a sweep test holds the two equal.
//
// A matmul runs as F folds (foldGeometry): pass-major, then column blocks,
// then row blocks. Fold i starts streaming at s_i = s_0 + i * g and feeds L
// vectors (L = m for WS, n for IS, k for OS), one every f cycles (the feed
// interval, MatmulShape::feed_interval; 1 unless each vector is converted on its
// way in), so the fold holds the edges for L f cycles and its last vector
// enters at s_i + (L - 1) f:
//   WS, IS  s_0 = R (the first weight tile shifts in)   OS  s_0 = 0
//   g = max(L f, R) double-buffered; single-buffered (L - 1) f + 1 + R (WS, IS)
//   or (L - 1) f + R (OS): the next tile's weights (WS, IS) or this tile's results
//   (OS) take R cycles to shift through a column
// and its last output leaves the array at
//   WS, IS  e_i = s_i + (L - 1) f + R + c_i - 1    (skew down R rows and across c_i columns)
//   OS      e_i = s_i + (L - 1) f + 2R + c_i - 1   (the same skew, then R cycles to drain a column)
// where c_i is the fold's columns in use. The instruction takes max_i e_i.
// With f = 1 these are L + R, L + R - 1, L + R + c_i - 2 and L + 2R + c_i - 2.
#pragma once

#include <cstdint>

#include "sim/mxu/array_config.hpp"

namespace tpusim {

struct ArrayTiming {
  uint64_t folds = 0;
  uint64_t cycles = 0;
  uint64_t macs = 0;  // useful multiply-accumulates: passes x m x k x n
  // cycles = stream + load_stall + fill_drain, each a count of whole cycles:
  uint64_t stream_cycles = 0;      // the edges taking vectors (F x L x f)
  uint64_t load_stall_cycles = 0;  // waiting for weights to load (WS, IS) or results to drain (OS) before a fold
  uint64_t fill_drain_cycles = 0;  // after the last vector entered: the wavefront leaving the array
};

// Checks the array, the shape and the feed interval (array_config.hpp) and throws on bad ones.
ArrayTiming arrayTiming(const ArrayConfig& array, const MatmulShape& shape);

}  // namespace tpusim
