#include "sim/ps/id_generator.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tpusim::ps {

uint64_t Rng::next() {
  uint64_t z = (m_state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Rng::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

uint64_t Rng::below(uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
}

ZipfIds::ZipfIds(uint64_t rows, double exponent, Rng& permutation_rng) : m_rows(rows) {
  if (rows > 1) {
    m_a = 1 + permutation_rng.below(rows - 1);
    while (std::gcd(m_a, rows) != 1) m_a = m_a % (rows - 1) + 1;  // walks 1..n-1; a = 1 always qualifies
    m_b = permutation_rng.below(rows);
  }
  if (exponent == 0) return;
  m_cdf.resize(rows);
  double sum = 0;
  for (uint64_t k = 0; k < rows; ++k) {
    sum += std::pow(static_cast<double>(k + 1), -exponent);
    m_cdf[k] = sum;
  }
}

uint64_t ZipfIds::draw(Rng& rng) const {
  if (m_cdf.empty()) return rowOfRank(rng.below(m_rows));
  const double u = rng.uniform() * m_cdf.back();
  const auto it = std::upper_bound(m_cdf.begin(), m_cdf.end(), u);
  const uint64_t rank = std::min<uint64_t>(static_cast<uint64_t>(it - m_cdf.begin()), m_rows - 1);
  return rowOfRank(rank);
}

double ZipfIds::rankProbability(uint64_t rank) const {
  if (m_cdf.empty()) return 1.0 / static_cast<double>(m_rows);
  const double below = rank == 0 ? 0.0 : m_cdf[rank - 1];
  return (m_cdf[rank] - below) / m_cdf.back();
}

}  // namespace tpusim::ps
