#include "sim/mxu/pe_kernels.hpp"

// Built with -ffp-contract=off (sim/CMakeLists.txt): a fused multiply-add would
// round once where the array rounds twice. The contiguous loops are compiled for
// AVX2 as well as the baseline and picked at load time; the bits do not depend on it.
namespace tpusim::pe {

namespace {

__attribute__((target_clones("avx2", "default"))) void addProducts(float* __restrict acc, const float* __restrict a,
                                                                   const float* __restrict b, uint64_t count) {
  for (uint64_t i = 0; i < count; ++i) acc[i] = acc[i] + a[i] * b[i];
}

__attribute__((target_clones("avx2", "default"))) void startSums(float* __restrict acc, const float* __restrict a,
                                                                 const float* __restrict b, uint64_t count) {
  for (uint64_t i = 0; i < count; ++i) acc[i] = 0.0f + a[i] * b[i];
}

}  // namespace

void multiplyAdd(float* acc, const float* a, const float* b, uint64_t lo, uint64_t hi, uint64_t stride) {
  if (stride == 1) return addProducts(acc + lo, a + lo, b + lo, hi - lo + 1);
  for (uint64_t c = lo; c <= hi; c += stride) acc[c] = acc[c] + a[c] * b[c];
}

void multiplyAddToZero(float* acc, const float* a, const float* b, uint64_t lo, uint64_t hi, uint64_t stride) {
  if (stride == 1) return startSums(acc + lo, a + lo, b + lo, hi - lo + 1);
  for (uint64_t c = lo; c <= hi; c += stride) acc[c] = 0.0f + a[c] * b[c];
}

}  // namespace tpusim::pe
