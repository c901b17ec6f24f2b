// Integer results as the CPU executor and the CUDA kernels both compute them, so they give the
// same bits: a float truncated to int64 (a Cast's conversion), Pow and Div. Pow exactly (a double
// pow is exact on x86 for such cases, but only within 2 ulp on a GPU, where 3^3 could truncate
// to 26; past 2^53 the results are the integer ones, as numpy's); Div without the one quotient
// int64 cannot hold trapping.
#pragma once

#include <cmath>
#include <cstdint>

#include "sim/common/float_bits.hpp"  // TPUSIM_HOST_DEVICE

namespace tpusim::numerics {

// A float truncated toward zero to int64, NaN to 0 and out-of-range values clamped (a plain
// cast of those is undefined, and x86 and the GPU resolve it differently): a Cast's, and a
// Pow's of an integer to a float power.
TPUSIM_HOST_DEVICE inline int64_t truncatedInt(double value) {
  if (value != value) return 0;
  const double t = trunc(value);
  if (t >= 9.2e18) return INT64_MAX;
  if (t <= -9.2e18) return INT64_MIN;
  return static_cast<int64_t>(t);
}

// base^exponent, wrapping as int64 multiplication does (a narrower dtype's wrap comes after: its
// low bits are the same). A negative exponent gives the real result truncated toward zero, as a
// Cast of it would: +-1 for a base of +-1, 0 for any other base but 0, whose infinity is
// clamped to INT64_MAX.
TPUSIM_HOST_DEVICE inline int64_t integerPow(int64_t base, int64_t exponent) {
  if (exponent < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exponent & 1) != 0 ? -1 : 1;
    return base == 0 ? INT64_MAX : 0;
  }
  uint64_t result = 1, square = static_cast<uint64_t>(base);  // unsigned: wrapping is defined
  for (auto e = static_cast<uint64_t>(exponent); e != 0; e >>= 1) {
    if ((e & 1) != 0) result *= square;
    square *= square;
  }
  return static_cast<int64_t>(result);
}

// x / y truncated toward zero, y not 0 (the callers report that): INT64_MIN / -1, whose
// quotient int64 cannot hold (x86 traps on it), wraps to INT64_MIN as two's complement does.
TPUSIM_HOST_DEVICE inline int64_t integerQuotient(int64_t x, int64_t y) {
  if (y == -1) return static_cast<int64_t>(0 - static_cast<uint64_t>(x));
  return x / y;
}

}  // namespace tpusim::numerics
