#include "sim/mxu/pe_kernels.hpp"

// Built with -ffp-contract=off (sim/CMakeLists.txt): a fused multiply-add would
// round once where the array rounds twice. The column loops are compiled for
// AVX2 as well as the baseline and picked at load time; the bits do not depend on it.
namespace tpusim::pe {

namespace {

// Eight floats at any float's alignment (GCC's vector extension: plain
// element-wise float arithmetic, two SSE halves where the CPU has no AVX; a
// vector of floats may alias floats).
using Vec = float __attribute__((vector_size(32), aligned(4)));
constexpr uint64_t kLanes = 8;
constexpr uint64_t kChunk = 4 * kLanes;  // columns whose sums stay in registers down the rows

inline const Vec* vectors(const float* p) {
  return reinterpret_cast<const Vec*>(p);
}
inline Vec* vectors(float* p) {
  return reinterpret_cast<Vec*>(p);
}

// kChunk adjacent columns, every row, the sums in registers.
__attribute__((target_clones("avx2", "default"))) void sumChunk(const float* a, uint64_t a_step, const float* w,
                                                                uint64_t w_step, uint64_t rows, bool more,
                                                                float* sums) {
  const Vec zero = {};
  const Vec* in = vectors(sums);
  const Vec* x = vectors(a);
  const Vec* y = vectors(w);
  Vec s0 = (more ? in[0] : zero) + x[0] * y[0];
  Vec s1 = (more ? in[1] : zero) + x[1] * y[1];
  Vec s2 = (more ? in[2] : zero) + x[2] * y[2];
  Vec s3 = (more ? in[3] : zero) + x[3] * y[3];
  for (uint64_t r = 1; r < rows; ++r) {
    x = vectors(a += a_step);
    y = vectors(w += w_step);
    s0 = s0 + x[0] * y[0];
    s1 = s1 + x[1] * y[1];
    s2 = s2 + x[2] * y[2];
    s3 = s3 + x[3] * y[3];
  }
  Vec* out = vectors(sums);
  out[0] = s0;
  out[1] = s1;
  out[2] = s2;
  out[3] = s3;
}

// kLanes adjacent columns.
__attribute__((target_clones("avx2", "default"))) void sumLanes(const float* a, uint64_t a_step, const float* w,
                                                                uint64_t w_step, uint64_t rows, bool more,
                                                                float* sums) {
  const Vec zero = {};
  Vec s = (more ? *vectors(sums) : zero) + *vectors(a) * *vectors(w);
  for (uint64_t r = 1; r < rows; ++r) s = s + *vectors(a += a_step) * *vectors(w += w_step);
  *vectors(sums) = s;
}

}  // namespace

void sumDown(const float* activations, uint64_t activation_step, const float* weights, uint64_t weight_step,
             uint64_t rows, uint64_t lo, uint64_t hi, uint64_t stride, bool more, float* sums) {
  uint64_t c = lo;
  if (stride == 1) {
    for (; c + kChunk <= hi + 1; c += kChunk)
      sumChunk(activations + c, activation_step, weights + c, weight_step, rows, more, sums + c);
    for (; c + kLanes <= hi + 1; c += kLanes)
      sumLanes(activations + c, activation_step, weights + c, weight_step, rows, more, sums + c);
  }
  for (; c <= hi; c += stride) {
    float sum = (more ? sums[c] : 0.0f) + activations[c] * weights[c];
    for (uint64_t r = 1; r < rows; ++r) sum = sum + activations[r * activation_step + c] * weights[r * weight_step + c];
    sums[c] = sum;
  }
}

}  // namespace tpusim::pe
