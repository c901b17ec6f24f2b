#include "sim/mxu/pe_kernels.hpp"

// Built with -ffp-contract=off (sim/CMakeLists.txt): a fused multiply-add would
// round once where the array rounds twice. The column loops are compiled for
// AVX2 as well as the baseline and picked at load time; the bits do not depend on it.
namespace tpusim::pe {

namespace {

// Eight floats, loaded and stored unaligned (GCC's vector extension: plain
// element-wise float arithmetic, two SSE halves where the CPU has no AVX).
using Vec = float __attribute__((vector_size(32)));
constexpr uint64_t kLanes = 8;
constexpr uint64_t kChunk = 4 * kLanes;  // columns whose sums stay in registers down the rows

inline Vec load(const float* p) {
  Vec v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

inline void store(float* p, Vec v) {
  __builtin_memcpy(p, &v, sizeof v);
}

// kChunk adjacent columns from `c`, every row, the sums in registers.
__attribute__((target_clones("avx2", "default"))) void sumChunk(const float* a, uint64_t a_step, const float* w,
                                                                uint64_t w_step, uint64_t rows, bool more,
                                                                float* sums) {
  const Vec zero = {};
  Vec s0 = (more ? load(sums) : zero) + load(a) * load(w);
  Vec s1 = (more ? load(sums + kLanes) : zero) + load(a + kLanes) * load(w + kLanes);
  Vec s2 = (more ? load(sums + 2 * kLanes) : zero) + load(a + 2 * kLanes) * load(w + 2 * kLanes);
  Vec s3 = (more ? load(sums + 3 * kLanes) : zero) + load(a + 3 * kLanes) * load(w + 3 * kLanes);
  for (uint64_t r = 1; r < rows; ++r) {
    a += a_step;
    w += w_step;
    s0 = s0 + load(a) * load(w);
    s1 = s1 + load(a + kLanes) * load(w + kLanes);
    s2 = s2 + load(a + 2 * kLanes) * load(w + 2 * kLanes);
    s3 = s3 + load(a + 3 * kLanes) * load(w + 3 * kLanes);
  }
  store(sums, s0);
  store(sums + kLanes, s1);
  store(sums + 2 * kLanes, s2);
  store(sums + 3 * kLanes, s3);
}

// kLanes adjacent columns.
__attribute__((target_clones("avx2", "default"))) void sumLanes(const float* a, uint64_t a_step, const float* w,
                                                                uint64_t w_step, uint64_t rows, bool more,
                                                                float* sums) {
  const Vec zero = {};
  Vec s = (more ? load(sums) : zero) + load(a) * load(w);
  for (uint64_t r = 1; r < rows; ++r) {
    a += a_step;
    w += w_step;
    s = s + load(a) * load(w);
  }
  store(sums, s);
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
