// The ids a worker looks up in one embedding table: drawn from a Zipf
// distribution over the table's rows (docs/strategies.md), deterministic for a
// seed. P(rank k) = k^-s / H(n, s) for ranks k = 1..n; s = 0 is uniform. Ranks
// become rows through a per-table bijection row = (a x (k - 1) + b) mod n with
// gcd(a, n) = 1, so the hot rows of a table are scattered over its rows rather
// than all at row 0, and every table's are in different places.
#pragma once

#include <cstdint>
#include <vector>

namespace tpusim::ps {

// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
// generators", OOPSLA 2014): 64-bit state, one add and a mix per draw.
class Rng {
 public:
  explicit Rng(uint64_t seed) : m_state(seed) {}
  uint64_t next();
  // Uniform in [0, 1) with 53 random bits.
  double uniform();
  // Uniform in [0, n); n > 0. Lemire's multiply-shift, bias below 2^-32 for n < 2^32.
  uint64_t below(uint64_t n);

 private:
  uint64_t m_state;
};

class ZipfIds {
 public:
  // `rows` > 0; `exponent` >= 0. The permutation is drawn from `permutation_rng`.
  ZipfIds(uint64_t rows, double exponent, Rng& permutation_rng);

  uint64_t rows() const { return m_rows; }
  // The row of rank k (0-based: rank 0 is the hottest).
  uint64_t rowOfRank(uint64_t rank) const {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(m_a) * rank + m_b) % m_rows);
  }
  // One id, drawn with `rng`.
  uint64_t draw(Rng& rng) const;
  // P(rank k), 0-based; for the tests' closed forms.
  double rankProbability(uint64_t rank) const;

 private:
  uint64_t m_rows;
  uint64_t m_a = 1;
  uint64_t m_b = 0;
  std::vector<double> m_cdf;  // cumulative k^-s, ranks 0..n-1; empty when uniform
};

}  // namespace tpusim::ps
