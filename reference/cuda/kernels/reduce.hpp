// Reductions (Reduce, ReduceSumTo) and data movement (Transpose, Slice, SliceGrad,
// Concat, Gather, GatherGrad) of the CUDA executor. Each output element is written
// by one thread, which adds its terms in the CPU executor's order (x's row-major
// order), so the sums are the CPU executor's bit for bit.
#pragma once

#include "reference/cuda/kernels/element.hpp"

namespace tpusim::reference::cuda {

enum class Reduction : int32_t { kSum, kMean, kMax, kMin };

// x reduced to `out_dims` (x's rank, 1 along each reduced dimension).
struct ReduceArgs {
  Reduction kind = Reduction::kSum;
  int rank = 0;
  int64_t x_dims[kMaxRank] = {};
  int64_t out_dims[kMaxRank] = {};
  int64_t out_count = 0;
  Ref x, out;
};

struct ReduceKernel {
  ReduceArgs a;

  TPUSIM_HD void operator()(int64_t o) const {
    int64_t x_strides[kMaxRank];
    int64_t stride = 1, reduced = 1;
    for (int d = a.rank - 1; d >= 0; --d) {
      x_strides[d] = stride;
      stride *= a.x_dims[d];
      if (a.out_dims[d] == 1) reduced *= a.x_dims[d];
    }
    int64_t base = 0, rest = o;
    for (int d = a.rank - 1; d >= 0; --d) {
      const int64_t coordinate = rest % a.out_dims[d];
      rest /= a.out_dims[d];
      base += coordinate * x_strides[d];  // out's dimension is x's, or 1 (coordinate 0)
    }
    const auto at = [&](int64_t r) {
      int64_t offset = base;
      for (int d = a.rank - 1; d >= 0; --d) {
        if (a.out_dims[d] != 1) continue;
        offset += (r % a.x_dims[d]) * x_strides[d];
        r /= a.x_dims[d];
      }
      return offset;
    };
    const bool extremum = a.kind == Reduction::kMax || a.kind == Reduction::kMin;
    if (!isFloating(a.x.elem)) {  // integer Max and Min
      int64_t best = a.kind == Reduction::kMax ? INT64_MIN : INT64_MAX;
      for (int64_t r = 0; r < reduced; ++r) {
        const int64_t v = loadInt(a.x, at(r));
        best = a.kind == Reduction::kMax ? (best < v ? v : best) : (v < best ? v : best);
      }
      storeInt(a.out, o, best);
      return;
    }
    if (extremum) {
      float best = a.kind == Reduction::kMax ? -INFINITY : INFINITY;
      for (int64_t r = 0; r < reduced; ++r) {
        const float v = loadFloat(a.x, at(r));
        best = a.kind == Reduction::kMax ? maxPropagatingNan(best, v) : minPropagatingNan(best, v);
      }
      storeFloat(a.out, o, best);
      return;
    }
    float sum = 0;
    for (int64_t r = 0; r < reduced; ++r) sum += loadFloat(a.x, at(r));
    if (a.kind == Reduction::kMean) sum = sum / static_cast<float>(reduced > 0 ? reduced : 1);
    storeFloat(a.out, o, sum);
  }
};

// out[out_base + sum_d c[d] out_strides[d]] = in[in_base + sum_d c[d] in_strides[d]] over the
// coordinates c of `dims`: Transpose, Slice, Concat (one part), SliceGrad (into zeros).
// Both tensors have the same dtype; elements are copied as they are.
struct CopyArgs {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t count = 0;
  Ref in, out;
  int64_t in_base = 0, out_base = 0;
  Strides in_strides, out_strides;
};

struct CopyKernel {
  CopyArgs a;

  TPUSIM_HD void operator()(int64_t i) const {
    int64_t from = a.in_base, to = a.out_base;
    for (int d = a.rank - 1; d >= 0; --d) {
      const int64_t coordinate = i % a.dims[d];
      i /= a.dims[d];
      from += coordinate * a.in_strides.at[d];
      to += coordinate * a.out_strides.at[d];
    }
    copyElement(a.in, from, a.out, to);
  }
};

// Gather along an axis: data viewed as [outer, length, inner], `indices` (count of them,
// already checked to lie in [-length, length)) pick rows of the middle axis.
struct GatherArgs {
  int64_t outer = 0, length = 0, inner = 0, indices_count = 0;
  Ref data, indices, out;
  uint64_t* fault = nullptr;  // the first index out of range's position (reportFault)
};

// Index i's row, or -1 when it is out of [-length, length) (computed indices are checked here).
TPUSIM_HD inline int64_t gatheredRow(const GatherArgs& a, int64_t i) {
  const int64_t index = loadInt(a.indices, i);
  if (index < -a.length || index >= a.length) return -1;
  return index < 0 ? index + a.length : index;
}

// One thread per output element; an index out of range is reported and its row reads as 0.
struct GatherKernel {
  GatherArgs a;

  TPUSIM_HD void operator()(int64_t e) const {
    const int64_t inner = e % a.inner, rest = e / a.inner;
    const int64_t i = rest % a.indices_count, o = rest / a.indices_count;
    const int64_t row = gatheredRow(a, i);
    if (row < 0) {
      reportFault(a.fault, i);
      zeroElement(a.out, e);
      return;
    }
    copyElement(a.data, (o * a.length + row) * a.inner + inner, a.out, e);
  }
};

// GatherGrad: `data` is the gradient dy ([outer, indices_count, inner]) and `out` the float
// sums ([outer, length, inner], zeroed first). One thread per (outer, inner) column adds
// the column's terms in the gather's order, as the CPU executor does, in float; a term of an
// index out of range is reported and left out.
struct GatherGradKernel {
  GatherArgs a;

  TPUSIM_HD void operator()(int64_t column) const {
    const int64_t inner = column % a.inner, o = column / a.inner;
    float* sums = static_cast<float*>(a.out.data);
    for (int64_t i = 0; i < a.indices_count; ++i) {
      const int64_t row = gatheredRow(a, i);
      if (row < 0) {
        reportFault(a.fault, i);
        continue;
      }
      sums[(o * a.length + row) * a.inner + inner] += loadFloat(a.data, (o * a.indices_count + i) * a.inner + inner);
    }
  }
};

}  // namespace tpusim::reference::cuda
