#include "sim/mxu/ws_timing.hpp"

#include <algorithm>

namespace tpusim {

namespace {
uint64_t ceilDiv(uint64_t a, uint64_t b) {
  return (a + b - 1) / b;
}
}  // namespace

WsTiming weightStationaryTiming(uint64_t m, uint64_t k, uint64_t n, MxuShape array) {
  const uint64_t r = array.rows;
  const uint64_t c = array.cols;
  const uint64_t folds = ceilDiv(k, r) * ceilDiv(n, c);
  const uint64_t cycles = r + (folds - 1) * std::max(m, r) + m + r + c - 2;
  return WsTiming{folds, cycles, m * k * n};
}

}  // namespace tpusim
