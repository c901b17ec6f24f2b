// What each row of the PE array took at its left edge, cycle by cycle, laid
// out for the PE-by-PE engines (pe_array.hpp): a value entering row r moves one
// PE right per cycle, so in cycle t PE (r, c) holds what the edge took in cycle
// t - c, and row(r)[c] is that entry. Moving every register of the row right is
// one pointer step; entering a value is one store, at row(r)[0].
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tpusim::pe {

class RowHistory {
 public:
  // `width` PEs per row; the slack between copies is a few rows' worth.
  RowHistory(uint64_t rows, uint64_t width)
      : m_rows(rows), m_width(width), m_slack(3 * width + 64), m_data(rows * (width + m_slack), 0.0f) {}

  // Starts the next cycle: what row(r)[c] held is now at row(r)[c + 1], and
  // row(r)[0] is the new cycle's entry (left as it was until written; PEs the
  // engine finds no operand for are never read).
  void advance() {
    if (m_base == 0) {  // keep the entries still inside the row: the newest width - 1
      const uint64_t span = m_width + m_slack;
      for (uint64_t r = 0; r < m_rows; ++r) {
        float* row = m_data.data() + r * span;
        std::copy_backward(row, row + m_width - 1, row + m_slack + m_width);
      }
      m_base = m_slack + 1;
    }
    --m_base;
  }

  float* row(uint64_t r) { return m_data.data() + r * (m_width + m_slack) + m_base; }

 private:
  uint64_t m_rows, m_width, m_slack;
  std::vector<float> m_data;  // rows x (width + slack): row r's entries from m_base on, newest first
  uint64_t m_base = 0;
};

}  // namespace tpusim::pe
