// The weight-stationary array, PE by PE (pe_array.hpp), a wavefront at a time.
//
// Weight stationary: rhs [K, N] tiles shift down the columns into the PEs, lhs
// [L, K] rows enter the left edge skewed one cycle per row, partial sums flow
// down and leave the bottom row. A partial sum moves down one row a cycle, so
// the sums PE (0, c) starts in cycle e pass PE (r, c) in cycle e + r: the
// wavefront e. Each cycle runs the controller, the edges, the weight loads and
// the checks; a wavefront's multiply-adds follow once its last row's cycle has
// run, all of its PEs at once, row after row, each column's sum in a register
// (pe_kernels.hpp). Each PE adds what it holds in its own cycle:
//   activation  PE (r, c) holds in cycle t what row r's edge took in t - c
//               (row_history.hpp)
//   weight      a PE in use holds its fold's tile, rhs[row0 + r, col0 + c]
//               (the checks below make sure it does), read where it lies
//   sum         the one PE (r - 1, c) passed down in cycle t - 1
// so every sum is built in the plain stepper's order, bit for bit.
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
#include "sim/mxu/weight_tiles.hpp"

namespace tpusim::pe {

namespace {

// One tile shifting into a column: rows r <= t - start hold it (unfinished)
// after cycle t, and all of them, finished, from cycle start + R - 1 on.
struct Load {
  int32_t fold = kNone;
  uint64_t start = 0;
};

constexpr uint64_t kBlock = 32;    // wavefronts whose arithmetic is done together
constexpr uint64_t kColumns = 32;  // columns summed through a block before the next
constexpr uint64_t kRows = 32;     // rows summed through a block before the next (partial sums kept)

// A fold's columns lo, lo + f, ..., hi in a wavefront; d is the wavefront less the fold's start.
struct Run {
  uint64_t lo, hi, d;
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
        m_history(m_r, m_c, m_r + kBlock),
        m_runs(kBlock),
        m_sums(kBlock * m_c, 0.0f),
        m_zeros(m_c, 0.0f),
        m_tiles(m_r, m_c),
        m_load(m_c),
        m_previous_load(m_c),
        m_col0_load(m_folds.size(), UINT64_MAX),
        m_start(m_folds.size(), 0),
        m_out(shape.m * shape.n, 0.0f) {}

  PeArrayRun run() {
    for (uint64_t c = 0; c < m_folds[0].cols; ++c) startLoad(c, 0, c, 0);
    uint64_t expected = 0;
    for (const Fold& f : m_folds) expected += m_l * f.cols;
    const uint64_t limit = arrayTiming(m_array, m_shape).cycles * 2 + 4 * (m_r + m_c) + 64;
    uint64_t done = 0;    // wavefronts whose multiply-adds are done
    uint64_t filled = 0;  // cycles whose edge values are in the history
    for (uint64_t t = 0; m_counts.exits < expected; ++t) {
      if (t > limit) hazard(t, 0, 0, "the array did not finish");
      // A fold has left the array once its last vector is past the bottom-right PE.
      while (m_live < m_next && m_start[m_live] + m_last + m_r + m_c - 2 < t) ++m_live;
      control(t);
      feed(t);
      for (size_t f = m_live; f < m_next; ++f) events(t, f);
      // Wavefront e has reached the bottom row by the end of cycle e + R - 1.
      const uint64_t ready = t + 2 > m_r ? t + 2 - m_r : 0;
      if (ready >= done + kBlock || (m_counts.exits == expected && ready > done)) {
        fill(filled, t + 1);
        filled = t + 1;
        wavefronts(done, ready);
        done = ready;
      }
    }
    const uint64_t last = m_folds.size() - 1;
    return {finish(m_geometry, m_counts, m_start[last] + m_l * m_f), std::move(m_out)};
  }

 private:
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

  // The edge in cycle t: the port is the next fold's once the last fold's
  // vectors have all entered row 0 (otherwise two would enter a row in one
  // cycle, or the folds' vectors would interleave, which the plain stepper
  // finds as a weight hazard in PE (0, 0)).
  void feed(uint64_t t) {
    bool row0 = false;
    for (size_t f = m_live; f < m_next; ++f) {
      const uint64_t since = t - m_start[f];  // vector j enters row r in cycle start + r + j f
      if (since == 0 && f > 0 && m_start[f - 1] + m_last >= t) {
        hazard(t, 0, 0, "two folds' vectors enter the row together");
      }
      row0 = row0 || (since <= m_last && (m_f == 1 || since % m_f == 0));
    }
    if (row0) m_counts.stream += m_f;
  }

  // The values the edge took in cycles [from, to): fold f's vector j enters
  // rows 0.. in cycles start + j f + r, read from lhs row j at once.
  void fill(uint64_t from, uint64_t to) {
    if (m_passes.empty()) return;  // the history holds zeros
    while (m_fill_first < m_next && m_start[m_fill_first] + m_last + m_r - 1 < from) ++m_fill_first;
    for (size_t f = m_fill_first; f < m_next && m_start[f] < to; ++f) {
      const Fold& fold = m_folds[f];
      const uint64_t s = m_start[f];
      const float* lhs = m_passes[fold.pass].lhs.data() + fold.row0;
      const uint64_t oldest = from > s + fold.rows - 1 ? from - s - (fold.rows - 1) : 0;  // the first vector's
      for (uint64_t j = (oldest + m_f - 1) / m_f; j < m_l && s + j * m_f < to; ++j) {
        const uint64_t t = s + j * m_f;  // row r takes it in cycle t + r
        const uint64_t first = from > t ? from - t : 0;
        const uint64_t last = std::min(fold.rows - 1, to - 1 - t);
        m_history.enterVector(m_history.slot(t), first, last, lhs + j * m_shape.k);
      }
    }
  }

  // Fold f's events in cycle t, `since` its start: vector 0 reaches PE (r, c)
  // when r + c = since and vector L - 1 when r + c = since - (L - 1) f.
  void events(uint64_t t, size_t f) {
    const Fold& fold = m_folds[f];
    const uint64_t since = t - m_start[f];
    trigger(t, f, since);
    const auto id = static_cast<int32_t>(f);
    const bool single = !m_array.double_buffered;
    // The first use of the tile in each PE (double-buffered: it swaps the tile in).
    const char* what = single ? "its weight is not loaded" : "its next weight is not loaded";
    forEachPeOnDiagonal(since, fold, [&](uint64_t r, uint64_t c) { checkLoaded(t, r, c, id, what); });
    if (single && since >= m_last) {  // and, single-buffered, the last
      forEachPeOnDiagonal(since - m_last, fold, [&](uint64_t r, uint64_t c) { checkLoaded(t, r, c, id, what); });
    }
    if (since < m_r - 1) return;  // the bottom row's sums leave the array
    const uint64_t d = since - (m_r - 1);
    uint64_t lo = d > m_last ? d - m_last : 0;
    if (m_f > 1) lo += (d - lo) % m_f;
    const uint64_t hi = std::min(d, fold.cols - 1);
    if (lo > hi) return;
    m_counts.exits += runLength(lo, hi);
    m_counts.last_exit = t;
  }

  // The PEs (r, c) of the fold's tile with r + c = diagonal.
  template <typename Visit>
  static void forEachPeOnDiagonal(uint64_t diagonal, const Fold& fold, Visit visit) {
    const uint64_t first = diagonal >= fold.cols ? diagonal - (fold.cols - 1) : 0;
    const uint64_t last = std::min(diagonal, fold.rows - 1);
    for (uint64_t r = first; r <= last; ++r) visit(r, diagonal - r);
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
  // In row 0, vector 0 is in column `since` and vector L - 1 in since - (L - 1) f.
  void trigger(uint64_t t, size_t f, uint64_t since) {
    const size_t next = f + 1;
    if (next >= m_folds.size()) return;
    const bool single = !m_array.double_buffered;
    if (single && since < m_last) return;
    const uint64_t c = single ? since - m_last : since;
    if (c >= m_c || c >= m_folds[next].cols) return;
    startLoad(c, static_cast<int32_t>(next), single ? t + 1 : t, t);
  }

  // The multiply-adds of wavefronts [e0, e1): each fold's run of columns in
  // each wavefront summed down its rows, kColumns x kRows PEs at a time through
  // all the wavefronts, so that those PEs' weights and activations stay in the
  // cache; each sum still adds row after row.
  void wavefronts(uint64_t e0, uint64_t e1) {
    while (m_done_first < m_next && m_start[m_done_first] + m_last + m_c - 1 < e0) ++m_done_first;
    const bool zeros = m_passes.empty();
    for (size_t f = m_done_first; f < m_next && m_start[f] < e1; ++f) {
      const Fold& fold = m_folds[f];
      bool any = false;
      for (uint64_t e = e0; e < e1; ++e) any = run(e, f, m_runs[e - e0]) || any;
      if (!any) continue;
      const float* weights =
          zeros ? m_zeros.data()
                : m_tiles.tile(static_cast<int32_t>(f), fold, m_passes[fold.pass].rhs.data(), m_shape.n);
      const uint64_t weight_step = zeros ? 0 : m_tiles.stride();
      const uint64_t width = m_f == 1 ? kColumns : m_c;  // a strided run is summed whole
      for (uint64_t c0 = 0; c0 < fold.cols; c0 += width) {
        for (uint64_t r0 = 0; r0 < fold.rows; r0 += kRows) {
          const uint64_t rows = std::min(kRows, fold.rows - r0);
          uint64_t slot = m_history.slot(e0);
          for (uint64_t e = e0; e < e1; ++e, slot = m_history.next(slot)) {
            const Run& run = m_runs[e - e0];
            const uint64_t lo = std::max(run.lo, c0), hi = std::min(run.hi, c0 + width - 1);
            if (run.lo > run.hi || lo > hi) continue;
            sumDown(m_history.wavefront(slot) + r0 * m_history.stride(), m_history.stride(), weights + r0 * weight_step,
                    weight_step, rows, lo, hi, m_f, r0 > 0, m_sums.data() + (e - e0) * m_c);
          }
        }
      }
      for (uint64_t e = e0; e < e1; ++e) {
        const Run& run = m_runs[e - e0];
        if (run.lo > run.hi) continue;
        m_counts.macs += fold.rows * runLength(run.lo, run.hi);
        if (m_f > 1) leave(fold, run, m_sums.data() + (e - e0) * m_c);
      }
      if (m_f == 1) leave(fold, m_start[f], e0, e1);
    }
  }

  // Fold f's columns in wavefront e: column c holds vector (d - c) / f, d = e - start.
  bool run(uint64_t e, size_t f, Run& run) const {
    run = Run{1, 0, 0};
    if (e < m_start[f]) return false;
    const uint64_t d = e - m_start[f];
    uint64_t lo = d > m_last ? d - m_last : 0;
    if (m_f > 1) lo += (d - lo) % m_f;
    const uint64_t hi = std::min(d, m_folds[f].cols - 1);
    if (lo > hi) return false;
    run = Run{lo, hi, d};
    return true;
  }

  // The bottom row's sums leave the array: in wavefront start + d, column c's
  // is added to out[(d - c) / f, col0 + c].
  void leave(const Fold& fold, const Run& run, const float* sums) {
    float* out = m_out.data() + fold.col0;
    uint64_t j = m_f == 1 ? run.d - run.lo : (run.d - run.lo) / m_f;
    for (uint64_t c = run.lo; c <= run.hi; c += m_f, --j) {
      float& o = out[j * m_shape.n + c];
      o = o + sums[c];
    }
  }

  // The same for a whole block of wavefronts [e0, e1) of one fold (a vector
  // every cycle), row of out by row of out: out[m, col0 + c] takes the sum of
  // wavefront start + m + c. Each element takes one sum per fold either way.
  void leave(const Fold& fold, uint64_t start, uint64_t e0, uint64_t e1) {
    const uint64_t d0 = std::max(e0, start) - start, d1 = e1 - 1 - start;  // the block's d range
    for (uint64_t m = d0 >= fold.cols ? d0 - (fold.cols - 1) : 0; m <= std::min(d1, m_l - 1); ++m) {
      float* out = m_out.data() + m * m_shape.n + fold.col0;
      const float* sums = m_sums.data() + (start + m - e0) * m_c;  // + c (m_c + 1) for column c
      const uint64_t last = std::min(fold.cols - 1, d1 - m);
      for (uint64_t c = d0 > m ? d0 - m : 0; c <= last; ++c) out[c] = out[c] + sums[c * (m_c + 1)];
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
  std::vector<Run> m_runs;            // per wavefront in the block: the fold's columns
  std::vector<float> m_sums;          // per wavefront in the block: its sums as they leave the bottom row
  std::vector<float> m_zeros;         // the weights when timing zeros
  WeightTiles m_tiles;                // the weights otherwise
  std::vector<Load> m_load;           // per column: the latest load
  std::vector<Load> m_previous_load;  // and the one before it
  std::vector<uint64_t> m_col0_load;  // per fold: when column 0 starts loading it
  std::vector<uint64_t> m_start;      // per fold: when its first vector enters row 0
  size_t m_next = 0;                  // the next fold to start
  size_t m_live = 0;                  // the oldest fold still in the array
  size_t m_fill_first = 0;            // the oldest fold whose vectors may still be entering
  size_t m_done_first = 0;            // the oldest fold in the next wavefront to sum
  std::vector<float> m_out;
  Counts m_counts;
};

}  // namespace

PeArrayRun weightStationary(const ArrayConfig& array, const MatmulShape& shape, const std::vector<PassOperands>& passes,
                            uint64_t early) {
  return WeightStationary(array, shape, passes, early).run();
}

}  // namespace tpusim::pe
