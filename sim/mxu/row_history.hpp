// What each row of the PE array took at its left edge, cycle by cycle, laid
// out for the PE-by-PE engines (pe_array.hpp). A value entering row r moves one
// PE right per cycle, so in cycle t PE (r, c) holds what the edge took in cycle
// t - c. Moving every register right costs nothing; entering a value is one
// store (two near the wrap).
//
// Row r is stored skewed by r, so that what moves together is one column:
// reads go by wavefront, the PEs (r, c) in cycles e + r, for all r, holding
//   wavefront(slot(e))[r * stride() + c],
// and writes by vector, element r entering row r in cycle t + r.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/mxu/pe_kernels.hpp"

namespace tpusim::pe {

class RowHistory {
 public:
  // `width` PEs per row; the entries of the last `cycles` cycles (at least the
  // width plus the rows) stay readable.
  RowHistory(uint64_t rows, uint64_t width, uint64_t cycles)
      : m_width(width),
        m_period(cycles + width),
        m_stride(paddedStride(m_period + width)),
        m_data(rows * m_stride, 0.0f) {}

  // Where cycle t sits: newer cycles lower, so a row reads forwards.
  uint64_t slot(uint64_t t) const {
    const uint64_t m = t % m_period;
    return m == 0 ? 0 : m_period - m;
  }
  // The slot of the cycle after the one at `slot`.
  uint64_t next(uint64_t slot) const { return slot == 0 ? m_period - 1 : slot - 1; }

  // A vector entering rows first..last, element r (values[r]) into row r in
  // cycle t + r, slot = slot(t): with row r skewed by r, one stored column. The
  // first width columns are also written past the end, so a read never wraps.
  void enterVector(uint64_t slot, uint64_t first, uint64_t last, const float* values) {
    float* at = m_data.data() + slot;
    for (uint64_t r = first; r <= last; ++r) at[r * m_stride] = values[r];
    if (slot >= m_width) return;
    at += m_period;
    for (uint64_t r = first; r <= last; ++r) at[r * m_stride] = values[r];
  }

  // Wavefront e, row 0, as above. Entries no value entered at are stale: the
  // engines read only PEs they know hold a value.
  const float* wavefront(uint64_t slot) const { return m_data.data() + slot; }
  uint64_t stride() const { return m_stride; }

 private:
  uint64_t m_width, m_period, m_stride;
  std::vector<float> m_data;  // rows x (period + width)
};

}  // namespace tpusim::pe
