#include "sim/mxu/array_timing.hpp"

#include <algorithm>

namespace tpusim {

ArrayTiming arrayTiming(const ArrayConfig& array, const MatmulShape& shape) {
  checkArray(array);
  checkShape(shape);
  const FoldGeometry g = foldGeometry(array, shape);
  const uint64_t r = array.rows, c = array.cols, l = g.stream;
  const bool output_stationary = array.dataflow == Dataflow::kOutputStationary;
  const uint64_t first_start = output_stationary ? 0 : r;
  const uint64_t single_gap = output_stationary ? l + r - 1 : l + r;
  const uint64_t gap = array.double_buffered ? std::max(l, r) : single_gap;
  const auto start = [&](uint64_t fold) { return first_start + fold * gap; };
  const auto end = [&](uint64_t fold, uint64_t cols) {
    return output_stationary ? start(fold) + l + 2 * r + cols - 2 : start(fold) + l + r + cols - 2;
  };
  const uint64_t last = g.folds - 1;
  uint64_t cycles = end(last, g.last_cols);
  // The last full-width fold may finish later than a narrow last one.
  if (g.col_blocks > 1) cycles = std::max(cycles, end(last - g.row_blocks, c));

  ArrayTiming t;
  t.folds = g.folds;
  t.cycles = cycles;
  t.macs = shape.passes * shape.m * shape.k * shape.n;
  t.stream_cycles = g.folds * l;
  t.load_stall_cycles = first_start + last * (gap - l);
  t.fill_drain_cycles = cycles - (start(last) + l);
  return t;
}

}  // namespace tpusim
