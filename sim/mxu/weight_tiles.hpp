// The weight tiles the weight-stationary engine (pe_weight_stationary.cpp) is
// summing with, copied out of rhs with their rows a padded stride apart
// (pe_kernels.hpp: rhs rows are often a power of two apart). A few are kept;
// asking for another replaces the one asked for least recently.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/mxu/pe_common.hpp"
#include "sim/mxu/pe_kernels.hpp"

namespace tpusim::pe {

class WeightTiles {
 public:
  WeightTiles(uint64_t rows, uint64_t cols) : m_stride(paddedStride(cols)), m_size(rows * m_stride) {}

  // Fold `id`'s tile: rhs[row0 + r, col0 + c] at [r * stride() + c].
  const float* tile(int32_t id, const Fold& fold, const float* rhs, uint64_t rhs_cols) {
    ++m_clock;
    for (Slot& slot : m_slots) {
      if (slot.fold != id) continue;
      slot.used = m_clock;
      return slot.data.data();
    }
    Slot* slot = nullptr;
    if (m_slots.size() < kSlots) {
      slot = &m_slots.emplace_back();
      slot->data.resize(m_size);
    } else {
      slot = &m_slots[0];
      for (Slot& s : m_slots) slot = s.used < slot->used ? &s : slot;
    }
    slot->fold = id;
    slot->used = m_clock;
    for (uint64_t r = 0; r < fold.rows; ++r) {
      const float* from = rhs + (fold.row0 + r) * rhs_cols + fold.col0;
      std::copy(from, from + fold.cols, slot->data.begin() + static_cast<ptrdiff_t>(r * m_stride));
    }
    return slot->data.data();
  }

  uint64_t stride() const { return m_stride; }

 private:
  static constexpr size_t kSlots = 4;
  struct Slot {
    int32_t fold = kNone;
    uint64_t used = 0;
    std::vector<float> data;
  };
  uint64_t m_stride, m_size;
  uint64_t m_clock = 0;
  std::vector<Slot> m_slots;
};

}  // namespace tpusim::pe
