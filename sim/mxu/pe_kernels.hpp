// The multiply-adds of a run of PEs in one row in one cycle, for the PE-by-PE
// engines (pe_array.hpp). Column c of the run adds a[c] x b[c] to acc[c], for
// c = lo, lo + stride, ..., up to hi (inclusive). Each product is rounded to
// float before it is added, never fused, so the result is the same bits at any
// vector width: the order of additions into each accumulator is the array's.
#pragma once

#include <cstdint>

namespace tpusim::pe {

// acc[c] = acc[c] + a[c] * b[c]
void multiplyAdd(float* acc, const float* a, const float* b, uint64_t lo, uint64_t hi, uint64_t stride);
// acc[c] = 0 + a[c] * b[c]: a PE starting a sum adds its product to a zero,
// which makes a product of -0 a +0 as the array's adder does.
void multiplyAddToZero(float* acc, const float* a, const float* b, uint64_t lo, uint64_t hi, uint64_t stride);

}  // namespace tpusim::pe
