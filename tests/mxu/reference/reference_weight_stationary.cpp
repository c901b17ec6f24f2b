// The weight-stationary array stepped the plain way: every PE, one at a time, every
// cycle, each register a Token that carries its fold and index. The
// reference the engine in sim/mxu is held to (reference_pe_array.hpp).
#include <algorithm>

#include "tests/mxu/reference/reference_common.hpp"

namespace tpusim::pe_reference {

namespace {

// Weight stationary: rhs [K, N] tiles shift down the columns into the PEs, lhs
// [L, K] rows enter the left edge skewed one cycle per row, partial sums flow
// down and leave the bottom row.
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
        m_pes(m_r * m_c),
        m_a(m_pes),
        m_a_next(m_pes),
        m_p(m_pes),
        m_p_next(m_pes),
        m_active(m_pes, 0.0f),
        m_active_fold(m_pes, kNone),
        m_chain(m_pes, 0.0f),
        m_chain_fold(m_pes, kNone),
        m_chain_final(m_pes, false),
        m_load_fold(m_c, kNone),
        m_load_start(m_c, 0),
        m_col0_load(m_folds.size(), UINT64_MAX),
        m_start(m_folds.size(), 0),
        m_out(shape.m * shape.n, 0.0f) {}

  PeArrayRun run() {
    for (uint64_t c = 0; c < m_folds[0].cols; ++c) startLoad(c, 0, c, 0);
    uint64_t expected = 0;
    for (const Fold& f : m_folds) expected += m_l * f.cols;
    const uint64_t limit = arrayTiming(m_array, m_shape).cycles * 2 + 4 * (m_r + m_c) + 64;
    std::vector<Token> inject(m_r);
    for (uint64_t t = 0; m_counts.exits < expected; ++t) {
      if (t > limit) hazard(t, 0, 0, "the array did not finish");
      control(t);
      feed(t, inject);
      step(t, inject);
      shiftWeights(t);
    }
    const uint64_t last = m_folds.size() - 1;
    return {finish(m_geometry, m_counts, m_start[last] + m_l * m_f), std::move(m_out)};
  }

 private:
  size_t at(uint64_t r, uint64_t c) const { return static_cast<size_t>(r * m_c + c); }

  // Starts fold m_next when the port is free and column 0 holds its weights.
  void control(uint64_t t) {
    if (m_next >= m_folds.size()) return;
    const uint64_t early = m_next == 0 ? 0 : m_early;
    const uint64_t loaded = m_col0_load[m_next];
    if (loaded == UINT64_MAX || t + early < loaded + m_r) return;
    if (m_next > 0 && t + early < m_start[m_next - 1] + m_l * m_f) return;
    m_start[m_next++] = t;
  }

  void feed(uint64_t t, std::vector<Token>& inject) {
    bool row0 = false;
    for (uint64_t r = 0; r < m_r; ++r) {
      inject[r] = Token{};
      forEachEntering(m_start, m_next, m_r, m_l, m_f, t, r, [&](int32_t f, uint64_t m) {
        const Fold& fold = m_folds[static_cast<size_t>(f)];
        if (r >= fold.rows) return;
        if (inject[r].valid()) hazard(t, r, 0, "two vectors enter the same row");
        inject[r] = {operand(m_passes, fold.pass, true, m * m_shape.k + fold.row0 + r), f, m};
        row0 = row0 || r == 0;
      });
    }
    if (row0) m_counts.stream += m_f;
  }

  void startLoad(uint64_t c, int32_t fold, uint64_t t, uint64_t now) {
    if (m_load_fold[c] != kNone && now < m_load_start[c] + m_r) hazard(now, 0, c, "the weight loader is busy");
    m_load_fold[c] = fold;
    m_load_start[c] = t;
    if (c == 0) m_col0_load[static_cast<size_t>(fold)] = t;
  }

  float weight(uint64_t t, uint64_t r, uint64_t c, int32_t fold) {
    const size_t i = at(r, c);
    if (!m_array.double_buffered) {
      if (m_chain_fold[i] != fold || !m_chain_final[i]) hazard(t, r, c, "its weight is not loaded");
      return m_chain[i];
    }
    if (m_active_fold[i] != fold) {  // the first vector of a fold swaps in the loaded tile
      if (m_chain_fold[i] != fold || !m_chain_final[i]) hazard(t, r, c, "its next weight is not loaded");
      m_active[i] = m_chain[i];
      m_active_fold[i] = fold;
    }
    return m_active[i];
  }

  void step(uint64_t t, const std::vector<Token>& inject) {
    for (uint64_t r = 0; r < m_r; ++r) {
      for (uint64_t c = 0; c < m_c; ++c) {
        const Token a = c == 0 ? inject[r] : m_a[at(r, c - 1)];
        const Token p = r == 0 ? Token{} : m_p[at(r - 1, c)];
        m_a_next[at(r, c)] = a;
        Token sum{};
        if (a.valid()) {
          const Fold& fold = m_folds[static_cast<size_t>(a.fold)];
          if (r == 0) trigger(t, c, a);
          if (c < fold.cols) {
            const float w = weight(t, r, c, a.fold);
            float base = 0.0f;
            if (r > 0) {
              if (p.fold != a.fold || p.index != a.index) hazard(t, r, c, "its partial sum is out of step");
              base = p.value;
            }
            sum = {base + a.value * w, a.fold, a.index};
            ++m_counts.macs;
          } else if (p.valid()) {
            hazard(t, r, c, "a partial sum reached an unused column");
          }
        } else if (p.valid()) {
          if (r < m_folds[static_cast<size_t>(p.fold)].rows) hazard(t, r, c, "its activation is missing");
          sum = p;  // a row the fold does not use passes the sum down
        }
        m_p_next[at(r, c)] = sum;
        if (r + 1 == m_r && sum.valid()) {
          const Fold& fold = m_folds[static_cast<size_t>(sum.fold)];
          float& out = m_out[sum.index * m_shape.n + fold.col0 + c];
          out = out + sum.value;
          ++m_counts.exits;
          m_counts.last_exit = t;
        }
      }
    }
    std::swap(m_a, m_a_next);
    std::swap(m_p, m_p_next);
  }

  // The top PE of column c starts the next tile's load: as the fold's first
  // vector passes (double-buffered) or after its last one (single-buffered).
  void trigger(uint64_t t, uint64_t c, const Token& a) {
    const auto next = static_cast<size_t>(a.fold) + 1;
    if (next >= m_folds.size() || c >= m_folds[next].cols) return;
    if (m_array.double_buffered && a.index == 0) startLoad(c, static_cast<int32_t>(next), t, t);
    if (!m_array.double_buffered && a.index + 1 == m_l) startLoad(c, static_cast<int32_t>(next), t + 1, t);
  }

  // Loading column c: in cycle j of the load every stage the front has reached
  // takes its upper neighbour's weight and the top takes row R - 1 - j's.
  void shiftWeights(uint64_t t) {
    for (uint64_t c = 0; c < m_c; ++c) {
      if (m_load_fold[c] == kNone || t < m_load_start[c] || t >= m_load_start[c] + m_r) continue;
      const uint64_t j = t - m_load_start[c];
      const int32_t f = m_load_fold[c];
      const Fold& fold = m_folds[static_cast<size_t>(f)];
      for (uint64_t r = j; r >= 1; --r) {
        m_chain[at(r, c)] = m_chain[at(r - 1, c)];
        m_chain_fold[at(r, c)] = f;
        m_chain_final[at(r, c)] = false;
      }
      const uint64_t row = m_r - 1 - j;
      m_chain[at(0, c)] =
          row < fold.rows ? operand(m_passes, fold.pass, false, (fold.row0 + row) * m_shape.n + fold.col0 + c) : 0.0f;
      m_chain_fold[at(0, c)] = f;
      m_chain_final[at(0, c)] = false;
      if (j + 1 == m_r) {
        for (uint64_t r = 0; r < m_r; ++r) m_chain_final[at(r, c)] = true;
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
  uint64_t m_f;  // the feed interval: a vector enters every m_f cycles
  size_t m_pes;
  std::vector<Token> m_a, m_a_next, m_p, m_p_next;  // activations moving right, partial sums moving down
  std::vector<float> m_active;                      // the weights in use (double-buffered)
  std::vector<int32_t> m_active_fold;
  std::vector<float> m_chain;  // the weight shift chain: the spare registers, or the only ones
  std::vector<int32_t> m_chain_fold;
  std::vector<bool> m_chain_final;
  std::vector<int32_t> m_load_fold;
  std::vector<uint64_t> m_load_start;
  std::vector<uint64_t> m_col0_load;  // per fold: when column 0 starts loading it
  std::vector<uint64_t> m_start;      // per fold: when its first vector enters row 0
  size_t m_next = 0;                  // the next fold to start
  std::vector<float> m_out;
  Counts m_counts;
};

}  // namespace

PeArrayRun weightStationary(const ArrayConfig& array, const MatmulShape& shape, const std::vector<PassOperands>& passes,
                            uint64_t early) {
  return WeightStationary(array, shape, passes, early).run();
}

}  // namespace tpusim::pe_reference
