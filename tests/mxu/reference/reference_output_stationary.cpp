// The output-stationary array stepped the plain way: every PE, one at a time, every
// cycle, each register a Token that carries its fold and index. The
// reference the engine in sim/mxu is held to (reference_pe_array.hpp).
//
// PE (r, c) accumulates out[m0 + r, n0 + c] of the fold: lhs [M, K] rows enter
// the left edge and rhs [K, N] columns the top edge, both skewed one cycle per
// row or column, so lhs[m0 + r, k] and rhs[k, n0 + c] meet in PE (r, c) at
// s + k + r + c. When column c's bottom PE would have finished (cycle
// s + L + R + c - 1, whether or not the fold uses that row) the column drains
// down and out, one value per cycle for R cycles.
//   double-buffered  the last MAC writes a separate output register, so the
//                    accumulator can start the next fold at once
//   single-buffered  the accumulators are the drain chain
#include <deque>

#include "tests/mxu/reference/reference_common.hpp"

namespace tpusim::pe_reference {

namespace {

// A sum being built (or waiting to drain): for out row `row`, k terms so far.
struct Sum {
  float value = 0.0f;
  int32_t fold = kNone;
  uint64_t k = 0;  // the last k added
  uint64_t row = 0;
  bool final = false;
  bool valid() const { return fold != kNone; }
};

struct Drain {
  uint64_t start;
  int32_t fold;
};

class OutputStationary {
 public:
  OutputStationary(const ArrayConfig& array, const MatmulShape& shape, const std::vector<PassOperands>& passes,
                   uint64_t early)
      : m_array(array),
        m_shape(shape),
        m_passes(passes),
        m_early(early),
        m_geometry(foldGeometry(array, shape)),
        m_folds(foldsOf(array, m_geometry, shape.passes)),
        m_r(array.rows),
        m_c(array.cols),
        m_l(shape.k),
        m_f(shape.feed_interval),
        m_a(m_r * m_c),
        m_a_next(m_r * m_c),
        m_b(m_r * m_c),
        m_b_next(m_r * m_c),
        m_acc(m_r * m_c),
        m_stage(m_r * m_c),
        m_drains(m_c),
        m_start(m_folds.size(), 0),
        m_out(shape.m * shape.n, 0.0f) {}

  PeArrayRun run() {
    uint64_t expected = 0;
    for (const Fold& f : m_folds) expected += f.rows * f.cols;
    const uint64_t limit = arrayTiming(m_array, m_shape).cycles * 2 + 4 * (m_r + m_c) + 64;
    std::vector<Token> left(m_r), top(m_c);
    for (uint64_t t = 0; m_counts.exits < expected; ++t) {
      if (t > limit) hazard(t, 0, 0, "the array did not finish");
      control(t);
      feed(t, left, top);
      drain(t);
      step(t, left, top);
    }
    return {finish(m_geometry, m_counts, m_start.back() + m_l * m_f), std::move(m_out)};
  }

 private:
  size_t at(uint64_t r, uint64_t c) const { return static_cast<size_t>(r * m_c + c); }
  // After the fold's last vector (entering at (m_l - 1) m_f) has crossed the column's bottom PE.
  uint64_t drainStart(uint64_t fold_start, uint64_t c) const { return fold_start + (m_l - 1) * m_f + m_r + c; }

  // Starts fold m_next when the ports are free and column 0's output chain
  // will have room: for its first result (double-buffered) or its first MAC.
  void control(uint64_t t) {
    if (m_next >= m_folds.size()) return;
    if (m_next > 0) {
      const uint64_t previous = m_start[m_next - 1];
      if (t + m_early < previous + m_l * m_f) return;
      const uint64_t first_write = m_array.double_buffered ? t + (m_l - 1) * m_f : t;
      if (first_write + m_early < drainStart(previous, 0)) return;
    }
    m_start[m_next] = t;
    const Fold& fold = m_folds[m_next];
    for (uint64_t c = 0; c < fold.cols; ++c) {
      std::deque<Drain>& queue = m_drains[c];
      const uint64_t start = drainStart(t, c);
      if (!queue.empty() && start < queue.back().start + m_r) hazard(t, 0, c, "two drains overlap in the column");
      queue.push_back({start, static_cast<int32_t>(m_next)});
    }
    ++m_next;
  }

  void feed(uint64_t t, std::vector<Token>& left, std::vector<Token>& top) {
    bool row0 = false;
    for (uint64_t i = 0; i < std::max(m_r, m_c); ++i) {
      if (i < m_r) left[i] = Token{};
      if (i < m_c) top[i] = Token{};
      forEachEntering(m_start, m_next, std::max(m_r, m_c), m_l, m_f, t, i, [&](int32_t f, uint64_t k) {
        const Fold& fold = m_folds[static_cast<size_t>(f)];
        if (i < m_r && i < fold.rows) {
          if (left[i].valid()) hazard(t, i, 0, "two values enter the same row");
          left[i] = {operand(m_passes, fold.pass, true, (fold.row0 + i) * m_shape.k + k), f, k};
          row0 = row0 || i == 0;
        }
        if (i < m_c && i < fold.cols) {
          if (top[i].valid()) hazard(t, 0, i, "two values enter the same column");
          top[i] = {operand(m_passes, fold.pass, false, k * m_shape.n + fold.col0 + i), f, k};
        }
      });
    }
    if (row0) m_counts.stream += m_f;
  }

  // In cycle j of a column's drain the bottom register leaves the array, the
  // registers from row j down shift one row, and row j is left empty.
  void drain(uint64_t t) {
    for (uint64_t c = 0; c < m_c; ++c) {
      std::deque<Drain>& queue = m_drains[c];
      if (queue.empty() || t < queue.front().start) continue;
      const uint64_t j = t - queue.front().start;
      const Fold& fold = m_folds[static_cast<size_t>(queue.front().fold)];
      Sum& bottom = m_stage[at(m_r - 1, c)];
      if (bottom.valid()) {
        if (!bottom.final || bottom.fold != queue.front().fold) hazard(t, m_r - 1, c, "it drains an unfinished sum");
        float& out = m_out[bottom.row * m_shape.n + fold.col0 + c];
        out = out + bottom.value;
        ++m_counts.exits;
        m_counts.last_exit = t;
      }
      for (uint64_t r = m_r - 1; r > j; --r) m_stage[at(r, c)] = m_stage[at(r - 1, c)];
      m_stage[at(j, c)] = Sum{};
      if (j + 1 == m_r) queue.pop_front();
    }
  }

  void step(uint64_t t, const std::vector<Token>& left, const std::vector<Token>& top) {
    for (uint64_t r = 0; r < m_r; ++r) {
      for (uint64_t c = 0; c < m_c; ++c) {
        const Token a = c == 0 ? left[r] : m_a[at(r, c - 1)];
        const Token b = r == 0 ? top[c] : m_b[at(r - 1, c)];
        m_a_next[at(r, c)] = a;
        m_b_next[at(r, c)] = b;
        if (!a.valid() || !b.valid()) continue;  // a row or column the fold does not use
        if (a.fold != b.fold || a.index != b.index) hazard(t, r, c, "its operands are out of step");
        mac(t, r, c, a, b);
      }
    }
    std::swap(m_a, m_a_next);
    std::swap(m_b, m_b_next);
  }

  void mac(uint64_t t, uint64_t r, uint64_t c, const Token& a, const Token& b) {
    Sum& sum = m_array.double_buffered ? m_acc[at(r, c)] : m_stage[at(r, c)];
    const uint64_t k = a.index;
    if (k == 0) {
      if (sum.valid()) hazard(t, r, c, "its accumulator still holds fold " + std::to_string(sum.fold));
      sum = {0.0f + a.value * b.value, a.fold, 0, m_folds[static_cast<size_t>(a.fold)].row0 + r, false};
    } else {
      if (sum.fold != a.fold || sum.k + 1 != k) hazard(t, r, c, "its accumulator is out of step");
      sum.value = sum.value + a.value * b.value;
      sum.k = k;
    }
    ++m_counts.macs;
    if (k + 1 < m_l) return;
    sum.final = true;
    if (!m_array.double_buffered) return;
    Sum& out = m_stage[at(r, c)];
    if (out.valid()) hazard(t, r, c, "its output register still holds fold " + std::to_string(out.fold));
    out = sum;
    sum = Sum{};
  }

  const ArrayConfig& m_array;
  const MatmulShape& m_shape;
  const std::vector<PassOperands>& m_passes;
  uint64_t m_early;
  FoldGeometry m_geometry;
  std::vector<Fold> m_folds;
  uint64_t m_r, m_c, m_l;
  uint64_t m_f;                                     // the feed interval: a vector enters every m_f cycles
  std::vector<Token> m_a, m_a_next, m_b, m_b_next;  // lhs moving right, rhs moving down
  std::vector<Sum> m_acc;                           // accumulators (double-buffered only)
  std::vector<Sum> m_stage;                         // the drain chain: output registers, or the accumulators
  std::vector<std::deque<Drain>> m_drains;          // per column, in start order
  std::vector<uint64_t> m_start;
  size_t m_next = 0;
  std::vector<float> m_out;
  Counts m_counts;
};

}  // namespace

PeArrayRun outputStationary(const ArrayConfig& array, const MatmulShape& shape, const std::vector<PassOperands>& passes,
                            uint64_t early) {
  return OutputStationary(array, shape, passes, early).run();
}

}  // namespace tpusim::pe_reference
