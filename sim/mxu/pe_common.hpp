// Pieces the PE-by-PE engines share (pe_array.hpp); internal to sim/mxu.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/mxu/pe_array.hpp"

namespace tpusim::pe {

// One weight (WS, IS) or output (OS) tile: its pass and the part of the
// stationary dimensions it covers.
struct Fold {
  uint64_t pass, row0, rows, col0, cols;
};

inline std::vector<Fold> foldsOf(const ArrayConfig& array, const FoldGeometry& g, uint64_t passes) {
  std::vector<Fold> folds;
  folds.reserve(g.folds);
  for (uint64_t p = 0; p < passes; ++p) {
    for (uint64_t cb = 0; cb < g.col_blocks; ++cb) {
      for (uint64_t rb = 0; rb < g.row_blocks; ++rb) {
        const uint64_t row0 = rb * array.rows, col0 = cb * array.cols;
        folds.push_back(
            {p, row0, std::min(array.rows, g.along_rows - row0), col0, std::min(array.cols, g.along_cols - col0)});
      }
    }
  }
  return folds;
}

[[noreturn]] inline void hazard(uint64_t cycle, uint64_t r, uint64_t c, const std::string& what) {
  throw Error(ErrorKind::kInternal, "PE array hazard at cycle " + std::to_string(cycle) + ", PE (" + std::to_string(r) +
                                        ", " + std::to_string(c) + "): " + what);
}

constexpr int32_t kNone = -1;

// A value moving between PEs: which fold and which vector (or k) it belongs to.
struct Token {
  float value = 0.0f;
  int32_t fold = kNone;
  uint64_t index = 0;
  bool valid() const { return fold != kNone; }
};

// Operand value, or 0 when timing zeros.
inline float operand(const std::vector<PassOperands>& passes, uint64_t pass, bool lhs, uint64_t at) {
  if (passes.empty()) return 0.0f;
  return lhs ? passes[pass].lhs[at] : passes[pass].rhs[at];
}

// The edges' skewed feed: lane i of an edge takes element j of a fold started at s in
// cycle s + i + j * interval, for j < length. Calls visit(f, j) for each fold f < started
// whose stream reaches lane i at cycle t, newest fold first; a fold has fully entered all
// `lanes` lanes by s + lanes + length * interval, and every older fold has too.
template <typename Visit>
void forEachEntering(const std::vector<uint64_t>& starts, size_t started, uint64_t lanes, uint64_t length,
                     uint64_t interval, uint64_t t, uint64_t i, Visit visit) {
  for (size_t back = 1; back <= started; ++back) {
    const size_t f = started - back;
    const uint64_t s = starts[f];
    if (s + lanes + length * interval <= t) break;
    if (t < s + i) continue;
    const uint64_t since = t - s - i;
    if (since % interval != 0 || since / interval >= length) continue;
    visit(static_cast<int32_t>(f), since / interval);
  }
}

struct Counts {
  uint64_t stream = 0, macs = 0, last_exit = 0, exits = 0;
};

inline ArrayTiming finish(const FoldGeometry& g, const Counts& counts, uint64_t last_stream_end) {
  ArrayTiming t;
  t.folds = g.folds;
  t.cycles = counts.last_exit + 1;
  t.macs = counts.macs;
  t.stream_cycles = counts.stream;
  t.fill_drain_cycles = t.cycles - last_stream_end;
  t.load_stall_cycles = last_stream_end - counts.stream;
  return t;
}

PeArrayRun weightStationary(const ArrayConfig& array, const MatmulShape& shape, const std::vector<PassOperands>& passes,
                            uint64_t early);
PeArrayRun outputStationary(const ArrayConfig& array, const MatmulShape& shape, const std::vector<PassOperands>& passes,
                            uint64_t early);

// A stepper for each dataflow the array runs natively (input stationary runs on the weight-stationary one).
struct Engines {
  using Engine = PeArrayRun (*)(const ArrayConfig&, const MatmulShape&, const std::vector<PassOperands>&, uint64_t);
  Engine weight_stationary;
  Engine output_stationary;
};

// simulatePeArray on the given engines: checks the arguments, then runs the
// array's dataflow (input stationary as weight stationary on the transposed problem).
PeArrayRun runOn(const Engines& engines, const ArrayConfig& array, const MatmulShape& shape,
                 const std::vector<PassOperands>& passes, uint64_t early_start);

}  // namespace tpusim::pe
