// The multiply-adds of the PE-by-PE engines (pe_array.hpp), many PEs at once.
// Each product is rounded to float before it is added, never fused, and each
// accumulator adds in the array's order, so the bits do not depend on the
// vector width the CPU offers.
#pragma once

#include <cstdint>

namespace tpusim::pe {

// A wavefront of sums flowing down `rows` rows, in columns c = lo, lo + stride,
// ..., hi (inclusive), each row adding its product:
//   sums[c] = (...((s + a[0][c] w[0][c]) + a[1][c] w[1][c]) + ...) + a[rows-1][c] w[rows-1][c]
// with a[r] = activations + r * activation_step and w[r] = weights + r * weight_step.
// s is the sum coming from the rows above, sums[c], when `more`, and otherwise 0:
// the top row starts each sum as 0 + a x w (which makes a product of -0 a +0,
// as the array's adder does).
void sumDown(const float* activations, uint64_t activation_step, const float* weights, uint64_t weight_step,
             uint64_t rows, uint64_t lo, uint64_t hi, uint64_t stride, bool more, float* sums);

// A row stride, in floats, of at least `floats` that puts rows an odd number
// of 64-byte cache lines apart: the kernels walk down many rows at once, and
// rows a power of two apart would crowd into a few cache sets.
inline uint64_t paddedStride(uint64_t floats) {
  const uint64_t lines = (floats + 15) / 16;
  return (lines % 2 == 0 ? lines + 1 : lines) * 16;
}

}  // namespace tpusim::pe
