#include "sim/mxu/array_timing.hpp"

#include <algorithm>

namespace tpusim {

ArrayTiming arrayTiming(const ArrayConfig& array, const MatmulShape& shape) {
  checkArray(array);
  checkShape(shape);
  checkFeed(array, shape);
  const FoldGeometry g = foldGeometry(array, shape);
  const uint64_t r = array.rows, c = array.cols, l = g.stream, f = shape.feed_interval;
  const uint64_t feed = l * f;  // cycles a fold holds the edges: a vector every f cycles
  const uint64_t last_entry = (l - 1) * f;
  const bool output_stationary = array.dataflow == Dataflow::kOutputStationary;
  const uint64_t first_start = output_stationary ? 0 : r;
  const uint64_t single_gap = output_stationary ? last_entry + r : last_entry + 1 + r;
  const uint64_t gap = array.double_buffered ? std::max(feed, r) : single_gap;
  const auto start = [&](uint64_t fold) { return first_start + fold * gap; };
  const auto end = [&](uint64_t fold, uint64_t cols) {
    return output_stationary ? start(fold) + last_entry + 2 * r + cols - 1 : start(fold) + last_entry + r + cols - 1;
  };
  const uint64_t last = g.folds - 1;
  uint64_t cycles = end(last, g.last_cols);
  // The last full-width fold may finish later than a narrow last one.
  if (g.col_blocks > 1) cycles = std::max(cycles, end(last - g.row_blocks, c));

  ArrayTiming t;
  t.folds = g.folds;
  t.cycles = cycles;
  t.macs = shape.passes * shape.m * shape.k * shape.n;
  t.stream_cycles = g.folds * feed;
  t.load_stall_cycles = first_start + last * (gap - feed);
  t.fill_drain_cycles = cycles - (start(last) + feed);
  return t;
}

}  // namespace tpusim
