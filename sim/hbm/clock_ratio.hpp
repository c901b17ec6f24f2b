// Exact conversion between cycles of the core clock and of the DRAM clock.
// Both frequencies are taken as whole hertz and the ratio reduced, so a cycle
// count converts with integer arithmetic (no drift over a long run). Cycle n of
// a clock begins at n / f.
#pragma once

#include <cmath>
#include <cstdint>
#include <numeric>

namespace tpusim {

class ClockRatio {
 public:
  ClockRatio(double core_hz, double dram_hz)
      : m_core(static_cast<uint64_t>(std::llround(core_hz))), m_dram(static_cast<uint64_t>(std::llround(dram_hz))) {
    const uint64_t common = std::gcd(m_core, m_dram);
    m_core /= common;
    m_dram /= common;
  }

  // The first DRAM cycle that begins at or after core cycle `core` begins.
  uint64_t dramAtOrAfter(uint64_t core) const { return divideUp(core, m_dram, m_core); }
  // The last DRAM cycle that begins at or before core cycle `core` begins.
  uint64_t dramAtOrBefore(uint64_t core) const {
    return static_cast<uint64_t>(static_cast<unsigned __int128>(core) * m_dram / m_core);
  }
  // The first core cycle that begins at or after DRAM cycle `dram` begins.
  uint64_t coreAtOrAfter(uint64_t dram) const { return divideUp(dram, m_core, m_dram); }

 private:
  static uint64_t divideUp(uint64_t count, uint64_t num, uint64_t den) {
    const unsigned __int128 product = static_cast<unsigned __int128>(count) * num;
    return static_cast<uint64_t>((product + den - 1) / den);
  }

  uint64_t m_core;
  uint64_t m_dram;
};

}  // namespace tpusim
