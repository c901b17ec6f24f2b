// Reductions (Reduce, ReduceSumTo) and data movement (Transpose, Slice, SliceGrad,
// Concat, Gather, GatherGrad) of the CUDA executor. Each output element is written
// by one thread, which adds its terms in the CPU executor's order (x's row-major
// order), so the sums are the CPU executor's bit for bit; except a reduction the device
// splits into chunks (ReduceArgs::chunk), whose sums are of partial sums.
#pragma once

#include "reference/cuda/kernels/element.hpp"

namespace tpusim::reference::cuda {

enum class Reduction : int32_t { kSum, kMean, kMax, kMin };

// x reduced to `out_dims` (x's rank, 1 along each reduced dimension). An output's terms are
// x's elements it covers, in x's row-major order.
struct ReduceArgs {
  Reduction kind = Reduction::kSum;
  int rank = 0;
  int64_t x_dims[kMaxRank] = {};
  int64_t out_dims[kMaxRank] = {};
  int64_t out_count = 0;
  Ref x, out;
  // 0: one thread folds all of an output's terms (the CPU executor's order). Else (floating
  // only, set by the device: Device::reduceChunk) each run of `chunk` consecutive terms is folded
  // by its own thread into `partials` ([out_count x reduceChunks()], floats), which one thread per
  // output then folds in order.
  int64_t chunk = 0;
  float* partials = nullptr;
};

TPUSIM_HD inline int64_t reducedTerms(const ReduceArgs& a) {
  int64_t terms = 1;
  for (int d = 0; d < a.rank; ++d) terms *= a.out_dims[d] == 1 ? a.x_dims[d] : 1;
  return terms;
}

TPUSIM_HD inline int64_t reduceChunks(const ReduceArgs& a) {
  return a.chunk > 0 ? (reducedTerms(a) + a.chunk - 1) / a.chunk : 1;
}

// Where output o's term r lies in x.
struct ReduceWalk {
  int64_t x_strides[kMaxRank] = {};
  int64_t base = 0;

  TPUSIM_HD ReduceWalk(const ReduceArgs& a, int64_t o) {
    int64_t stride = 1;
    for (int d = a.rank - 1; d >= 0; --d) {
      x_strides[d] = stride;
      stride *= a.x_dims[d];
    }
    for (int d = a.rank - 1; d >= 0; --d) {
      base += (o % a.out_dims[d]) * x_strides[d];  // out's dimension is x's, or 1 (coordinate 0)
      o /= a.out_dims[d];
    }
  }

  TPUSIM_HD int64_t at(const ReduceArgs& a, int64_t r) const {
    int64_t offset = base;
    for (int d = a.rank - 1; d >= 0; --d) {
      if (a.out_dims[d] != 1) continue;
      offset += (r % a.x_dims[d]) * x_strides[d];
      r /= a.x_dims[d];
    }
    return offset;
  }
};

// A float reduction's start and step: sums start from 0, a maximum from -inf (NaN wins both ways).
TPUSIM_HD inline float reduceStart(Reduction kind) {
  return kind == Reduction::kMax ? -INFINITY : kind == Reduction::kMin ? INFINITY : 0.0f;
}
TPUSIM_HD inline float reduceStep(Reduction kind, float acc, float v) {
  return kind == Reduction::kMax   ? maxPropagatingNan(acc, v)
         : kind == Reduction::kMin ? minPropagatingNan(acc, v)
                                   : acc + v;
}

// Output o from its folded terms (a mean divides by the count of terms).
TPUSIM_HD inline void storeReduced(const ReduceArgs& a, int64_t o, float acc) {
  if (a.kind == Reduction::kMean) {
    const int64_t terms = reducedTerms(a);
    acc = acc / static_cast<float>(terms > 0 ? terms : 1);
  }
  storeFloat(a.out, o, acc);
}

struct ReduceKernel {  // one thread per output element, all its terms in order
  ReduceArgs a;

  TPUSIM_HD void operator()(int64_t o) const {
    const ReduceWalk walk(a, o);
    const int64_t terms = reducedTerms(a);
    if (!isFloating(a.x.elem)) {  // integer Max and Min
      int64_t best = a.kind == Reduction::kMax ? INT64_MIN : INT64_MAX;
      for (int64_t r = 0; r < terms; ++r) {
        const int64_t v = loadInt(a.x, walk.at(a, r));
        best = a.kind == Reduction::kMax ? (best < v ? v : best) : (v < best ? v : best);
      }
      storeInt(a.out, o, best);
      return;
    }
    float acc = reduceStart(a.kind);
    for (int64_t r = 0; r < terms; ++r) acc = reduceStep(a.kind, acc, loadFloat(a.x, walk.at(a, r)));
    storeReduced(a, o, acc);
  }
};

struct ReducePartialKernel {  // one thread per (output, chunk): the chunk's terms in order
  ReduceArgs a;

  TPUSIM_HD void operator()(int64_t i) const {
    const int64_t chunks = reduceChunks(a), o = i / chunks, first = i % chunks * a.chunk;
    const int64_t terms = reducedTerms(a), last = first + a.chunk < terms ? first + a.chunk : terms;
    const ReduceWalk walk(a, o);
    float acc = reduceStart(a.kind);
    for (int64_t r = first; r < last; ++r) acc = reduceStep(a.kind, acc, loadFloat(a.x, walk.at(a, r)));
    a.partials[i] = acc;
  }
};

struct ReduceCombineKernel {  // one thread per output: its chunks' partials in order
  ReduceArgs a;

  TPUSIM_HD void operator()(int64_t o) const {
    const int64_t chunks = reduceChunks(a);
    float acc = reduceStart(a.kind);
    for (int64_t c = 0; c < chunks; ++c) acc = reduceStep(a.kind, acc, a.partials[o * chunks + c]);
    storeReduced(a, o, acc);
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
