// The weight-stationary array, PE by PE (pe_array.hpp), a row of PEs at a time.
//
// Weight stationary: rhs [K, N] tiles shift down the columns into the PEs, lhs
// [L, K] rows enter the left edge skewed one cycle per row, partial sums flow
// down and leave the bottom row. Every register is kept where the value in it
// stays put as the array moves, so a cycle copies nothing:
//   activations   PE (r, c) holds in cycle t what row r's edge took in t - c
//                 (row_history.hpp)
//   partial sums  the sum PE (r, c) passes down in cycle t is the one PE
//                 (r + 1, c) adds to in t + 1: one register row per diagonal
//                 t - r, reused every R cycles
//   weights       each PE's register in use and its shift-chain register
// In cycle t the PEs of row r working for one fold are a run of columns (every
// f-th one when vectors enter every f cycles), so their multiply-adds are one
// loop over contiguous registers (pe_kernels.hpp).
//
// The checks of the plain stepper (tests/mxu/reference) that a schedule can
// break are kept: two vectors entering a row in one cycle; a weight used before
// its tile has shifted in, or after the next tile has begun to overwrite it
// (checked at each tile's first and last use in each PE: the chain's state only
// moves forward, so a tile loaded at both is loaded between them); the loader
// still busy; and two folds' streams interleaving in a row, which the plain
// stepper finds as a weight hazard in PE (0, 0). Its other checks (an operand
// and the partial sum beside it of different vectors) hold by construction here.
#include <algorithm>

#include "sim/mxu/pe_common.hpp"
#include "sim/mxu/pe_kernels.hpp"
#include "sim/mxu/row_history.hpp"

namespace tpusim::pe {

namespace {

// One tile shifting into a column: rows r <= t - start hold it (unfinished)
// after cycle t, and all of them, finished, from cycle start + R - 1 on.
struct Load {
  int32_t fold = kNone;
  uint64_t start = 0;
};

class WeightStationary {
 public:
  WeightStationary(const ArrayConfig& array, const MatmulShape& shape, const std::vector<PassOperands>& passes,
                   uint64_t early)
      : m_array(array),
        m_shape(shape),
        m_passes(passes),
        m_early(early),
        m_geometry(foldGeometry(array, shape)),
        m_folds(foldsOf(array, m_geometry, shape.passes)),
        m_r(array.rows),
        m_c(array.cols),
        m_l(shape.m),
        m_f(shape.feed_interval),
        m_last((m_l - 1) * m_f),
        m_history(m_r, m_c),
        m_sums(m_r * m_c, 0.0f),
        m_active(m_r * m_c, 0.0f),
        m_chain(m_r * m_c, 0.0f),
        m_load(m_c),
        m_previous_load(m_c),
        m_col0_load(m_folds.size(), UINT64_MAX),
        m_start(m_folds.size(), 0),
        m_row_taken(m_r, UINT64_MAX),
        m_out(shape.m * shape.n, 0.0f) {}

  PeArrayRun run() {
    for (uint64_t c = 0; c < m_folds[0].cols; ++c) startLoad(c, 0, c, 0);
    uint64_t expected = 0;
    for (const Fold& f : m_folds) expected += m_l * f.cols;
    const uint64_t limit = arrayTiming(m_array, m_shape).cycles * 2 + 4 * (m_r + m_c) + 64;
    for (uint64_t t = 0; m_counts.exits < expected; ++t) {
      if (t > limit) hazard(t, 0, 0, "the array did not finish");
      // A fold has left the array once its last vector is past the bottom-right PE.
      while (m_live < m_next && m_start[m_live] + m_last + m_r + m_c - 2 < t) ++m_live;
      control(t);
      feed(t);
      step(t);
      finishLoads(t);
    }
    const uint64_t last = m_folds.size() - 1;
    return {finish(m_geometry, m_counts, m_start[last] + m_l * m_f), std::move(m_out)};
  }

 private:
  size_t at(uint64_t r, uint64_t c) const { return static_cast<size_t>(r * m_c + c); }
  // Columns lo, lo + f, ..., hi.
  uint64_t runLength(uint64_t lo, uint64_t hi) const { return m_f == 1 ? hi - lo + 1 : (hi - lo) / m_f + 1; }

  // Starts fold m_next when the port is free and column 0 holds its weights.
  void control(uint64_t t) {
    if (m_next >= m_folds.size()) return;
    const uint64_t early = m_next == 0 ? 0 : m_early;
    const uint64_t loaded = m_col0_load[m_next];
    if (loaded == UINT64_MAX || t + early < loaded + m_r) return;
    if (m_next > 0 && t + early < m_start[m_next - 1] + m_l * m_f) return;
    m_start[m_next++] = t;
  }

  // Fold f's vector j enters row r (r < its rows) in cycle start + r + j f.
  void feed(uint64_t t) {
    m_history.advance();
    bool row0 = false;
    for (size_t f = m_live; f < m_next; ++f) {
      const Fold& fold = m_folds[f];
      const uint64_t since = t - m_start[f];  // = r + j f for the rows taking a vector
      if (since == 0 && f > 0 && m_start[f - 1] + m_last > t) {
        hazard(t, 0, 0, "two folds' vectors interleave in the row");
      }
      uint64_t r = since > m_last ? since - m_last : 0;
      if (m_f > 1) r += (since - r) % m_f;
      const uint64_t last_row = std::min(since, fold.rows - 1);
      if (r > last_row) continue;
      const float* lhs = m_passes.empty() ? nullptr : m_passes[fold.pass].lhs.data();
      for (uint64_t j = m_f == 1 ? since - r : (since - r) / m_f;; --j) {
        if (m_row_taken[r] == t) hazard(t, r, 0, "two vectors enter the same row");
        m_row_taken[r] = t;
        m_history.row(r)[0] = lhs == nullptr ? 0.0f : lhs[j * m_shape.k + fold.row0 + r];
        row0 = row0 || r == 0;
        if (r + m_f > last_row) break;
        r += m_f;
      }
    }
    if (row0) m_counts.stream += m_f;
  }

  void step(uint64_t t) {
    const uint64_t diagonal = t % m_r;  // register row of the partial sums on diagonal t - r
    for (uint64_t r = 0; r < m_r && r <= t; ++r) {
      float* sums = m_sums.data() + at(diagonal >= r ? diagonal - r : diagonal + m_r - r, 0);
      const float* activations = m_history.row(r);
      for (size_t f = m_live; f < m_next; ++f) {
        if (t < m_start[f] + r) break;          // not in this row yet, nor any newer fold
        const uint64_t d = t - m_start[f] - r;  // column c holds vector (d - c) / f
        if (d > m_last + m_c - 1) continue;     // past this row
        if (r == 0) trigger(t, f, d);
        const Fold& fold = m_folds[f];
        uint64_t lo = d > m_last ? d - m_last : 0;
        if (m_f > 1) lo += (d - lo) % m_f;
        const uint64_t hi = std::min(d, fold.cols - 1);
        if (lo > hi) continue;
        if (r < fold.rows) addProducts(t, r, f, d, lo, hi, sums, activations);
        if (r + 1 == m_r) leave(t, fold, d, lo, hi, sums);
      }
    }
  }

  // Row r's PEs in columns lo..hi (every f-th) add their products for fold f.
  void addProducts(uint64_t t, uint64_t r, size_t f, uint64_t d, uint64_t lo, uint64_t hi, float* sums,
                   const float* activations) {
    const auto fold = static_cast<int32_t>(f);
    if (m_array.double_buffered) {
      if (d <= hi) {  // vector 0 reaches PE (r, d): it swaps in the loaded tile
        checkLoaded(t, r, d, fold, "its next weight is not loaded");
        m_active[at(r, d)] = m_chain[at(r, d)];
      }
    } else {
      if (d <= hi) checkLoaded(t, r, d, fold, "its weight is not loaded");
      if (d >= m_last && d - m_last >= lo) checkLoaded(t, r, d - m_last, fold, "its weight is not loaded");
    }
    const float* weights = (m_array.double_buffered ? m_active : m_chain).data() + at(r, 0);
    if (r == 0) {
      pe::multiplyAddToZero(sums, activations, weights, lo, hi, m_f);
    } else {
      pe::multiplyAdd(sums, activations, weights, lo, hi, m_f);
    }
    m_counts.macs += runLength(lo, hi);
  }

  // The bottom row's sums leave the array: column c's is out[(d - c) / f, col0 + c].
  void leave(uint64_t t, const Fold& fold, uint64_t d, uint64_t lo, uint64_t hi, const float* sums) {
    float* out = m_out.data() + fold.col0;
    uint64_t j = m_f == 1 ? d - lo : (d - lo) / m_f;
    for (uint64_t c = lo; c <= hi; c += m_f, --j) {
      float& o = out[j * m_shape.n + c];
      o = o + sums[c];
    }
    m_counts.exits += runLength(lo, hi);
    m_counts.last_exit = t;
  }

  // PE (r, c)'s weight registers hold fold's tile, finished, as of the end of
  // cycle t - 1: the last load whose front had reached row r by then is fold's
  // and had reached the bottom.
  void checkLoaded(uint64_t t, uint64_t r, uint64_t c, int32_t fold, const char* what) const {
    const Load* load = &m_load[c];
    if (load->fold == kNone || load->start + r >= t) load = &m_previous_load[c];
    if (load->fold != fold || load->start + m_r > t) hazard(t, r, c, what);
  }

  void startLoad(uint64_t c, int32_t fold, uint64_t t, uint64_t now) {
    if (m_load[c].fold != kNone && now < m_load[c].start + m_r) hazard(now, 0, c, "the weight loader is busy");
    m_previous_load[c] = m_load[c];
    m_load[c] = {fold, t};
    if (c == 0) m_col0_load[static_cast<size_t>(fold)] = t;
  }

  // The top PE of column c starts the next tile's load: as the fold's first
  // vector passes (double-buffered) or after its last one (single-buffered).
  // In row 0, vector 0 is in column d and vector L - 1 in column d - (L - 1) f.
  void trigger(uint64_t t, size_t f, uint64_t d) {
    const size_t next = f + 1;
    if (next >= m_folds.size()) return;
    const uint64_t c = m_array.double_buffered ? d : d - m_last;
    if (d < (m_array.double_buffered ? 0 : m_last) || c >= m_c || c >= m_folds[next].cols) return;
    startLoad(c, static_cast<int32_t>(next), m_array.double_buffered ? t : t + 1, t);
  }

  // A column's load finishes in cycle start + R - 1: its chain then holds the
  // tile, row r's weight in row r (zero below a short K block).
  void finishLoads(uint64_t t) {
    for (uint64_t c = 0; c < m_c; ++c) {
      const Load& load = m_load[c];
      if (load.fold == kNone || load.start + m_r - 1 != t) continue;
      const Fold& fold = m_folds[static_cast<size_t>(load.fold)];
      const float* rhs = m_passes.empty() ? nullptr : m_passes[fold.pass].rhs.data();
      for (uint64_t r = 0; r < m_r; ++r) {
        m_chain[at(r, c)] = rhs != nullptr && r < fold.rows ? rhs[(fold.row0 + r) * m_shape.n + fold.col0 + c] : 0.0f;
      }
    }
  }

  const ArrayConfig& m_array;
  const MatmulShape& m_shape;
  const std::vector<PassOperands>& m_passes;
  uint64_t m_early;
  FoldGeometry m_geometry;
  std::vector<Fold> m_folds;
  uint64_t m_r, m_c, m_l;
  uint64_t m_f;                       // the feed interval: a vector enters every m_f cycles
  uint64_t m_last;                    // (L - 1) f: when a fold's last vector enters, after its first
  RowHistory m_history;               // activations
  std::vector<float> m_sums;          // partial sums: R register rows, one per diagonal t - r (mod R)
  std::vector<float> m_active;        // the weights in use (double-buffered)
  std::vector<float> m_chain;         // the weight shift chain: the spare registers, or the only ones
  std::vector<Load> m_load;           // per column: the latest load
  std::vector<Load> m_previous_load;  // and the one before it
  std::vector<uint64_t> m_col0_load;  // per fold: when column 0 starts loading it
  std::vector<uint64_t> m_start;      // per fold: when its first vector enters row 0
  std::vector<uint64_t> m_row_taken;  // per row: the last cycle it took a vector
  size_t m_next = 0;                  // the next fold to start
  size_t m_live = 0;                  // the oldest fold still in the array
  std::vector<float> m_out;
  Counts m_counts;
};

}  // namespace

PeArrayRun weightStationary(const ArrayConfig& array, const MatmulShape& shape, const std::vector<PassOperands>& passes,
                            uint64_t early) {
  return WeightStationary(array, shape, passes, early).run();
}

}  // namespace tpusim::pe
