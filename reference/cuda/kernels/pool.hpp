// Max and average pooling over up to 6 spatial dimensions, its argmax indices and
// its gradient, as the CPU executor computes them (reference/cpu/pool.hpp): windows
// visited in row-major kernel order, max ignores padding and takes the first maximum,
// an average divides by the window inside the input (or the padded input).
#pragma once

#include "reference/cuda/kernels/element.hpp"

namespace tpusim::reference::cuda {

inline constexpr int kMaxPoolRank = kMaxRank - 2;

struct PoolArgs {
  int rank = 0;       // spatial dimensions
  int64_t planes = 0;  // N x C
  int64_t x_spatial[kMaxPoolRank] = {}, y_spatial[kMaxPoolRank] = {};
  int64_t kernel[kMaxPoolRank] = {}, strides[kMaxPoolRank] = {}, dilations[kMaxPoolRank] = {};
  int64_t pads[2 * kMaxPoolRank] = {};  // rank begins, then rank ends
  bool max = true, count_include_pad = false, column_major_indices = false;
  Ref x, y;         // Pool: y; PoolArgmax: y holds the int64 indices; PoolGrad: y is dy
  int plan = -1;    // Pool: from Device::planPool, made before the timed runs; -1: this kernel
  float* dx = nullptr;  // PoolGrad: float sums over x's shape
};

TPUSIM_HD inline int64_t planeSize(const int64_t* dims, int rank) {
  int64_t size = 1;
  for (int d = 0; d < rank; ++d) size *= dims[d];
  return size;
}

// Visits output element `out` (plane-major)'s window: visit(x_offset) for each element inside
// the input, in window order; returns the count an average divides by.
template <typename Visit>
TPUSIM_HD int64_t forWindow(const PoolArgs& a, int64_t out, Visit visit) {
  const int64_t out_plane = planeSize(a.y_spatial, a.rank), plane = planeSize(a.x_spatial, a.rank);
  const int64_t p = out / out_plane;
  int64_t position[kMaxPoolRank];
  int64_t rest = out % out_plane;
  for (int d = a.rank - 1; d >= 0; --d) {
    position[d] = rest % a.y_spatial[d];
    rest /= a.y_spatial[d];
  }
  const int64_t window = planeSize(a.kernel, a.rank);
  int64_t inside_count = 0, padded_count = 0;
  for (int64_t w = 0; w < window; ++w) {
    int64_t k[kMaxPoolRank];
    int64_t left = w;
    for (int d = a.rank - 1; d >= 0; --d) {
      k[d] = left % a.kernel[d];
      left /= a.kernel[d];
    }
    bool inside = true, inside_padded = true;
    int64_t linear = 0;
    for (int d = 0; d < a.rank; ++d) {
      const int64_t at = position[d] * a.strides[d] - a.pads[d] + k[d] * a.dilations[d];
      inside = inside && at >= 0 && at < a.x_spatial[d];
      inside_padded = inside_padded && at < a.x_spatial[d] + a.pads[d + a.rank];
      linear = linear * a.x_spatial[d] + at;
    }
    padded_count += inside_padded ? 1 : 0;
    if (inside) {
      ++inside_count;
      visit(p * plane + linear);
    }
  }
  return a.count_include_pad ? padded_count : inside_count;
}

// The first maximum of the window, or -1 for a window wholly in the padding.
TPUSIM_HD inline int64_t windowArgmax(const PoolArgs& a, int64_t out) {
  int64_t best = -1;
  float best_value = 0;
  forWindow(a, out, [&](int64_t at) {
    const float v = loadFloat(a.x, at);
    if (best < 0 || v > best_value) {
      best = at;
      best_value = v;
    }
  });
  return best;
}

struct PoolKernel {  // one thread per output element
  PoolArgs a;
  TPUSIM_HD void operator()(int64_t out) const {
    if (!isFloating(a.x.elem)) {  // integer max pooling
      int64_t best = INT64_MIN;
      bool any = false;
      forWindow(a, out, [&](int64_t at) {
        const int64_t v = loadInt(a.x, at);
        if (!any || v > best) best = v;
        any = true;
      });
      storeInt(a.y, out, best);
      return;
    }
    if (a.max) {
      const int64_t best = windowArgmax(a, out);
      storeFloat(a.y, out, best < 0 ? -3.40282347e38f : loadFloat(a.x, best));
      return;
    }
    float sum = 0;
    const int64_t divisor = forWindow(a, out, [&](int64_t at) { sum += loadFloat(a.x, at); });
    storeFloat(a.y, out, divisor > 0 ? sum / static_cast<float>(divisor) : 0.0f);
  }
};

struct PoolArgmaxKernel {  // one thread per output element
  PoolArgs a;
  TPUSIM_HD void operator()(int64_t out) const {
    int64_t index = windowArgmax(a, out);
    if (index >= 0 && a.column_major_indices) {
      // Re-count the position inside its plane with the first spatial dimension fastest.
      const int64_t plane = planeSize(a.x_spatial, a.rank);
      int64_t rest = index % plane, reversed = 0;
      for (int d = a.rank - 1; d >= 0; --d) {
        const int64_t coordinate = rest % a.x_spatial[d];
        rest /= a.x_spatial[d];
        reversed += coordinate * planeSize(a.x_spatial, d);
      }
      index = index - index % plane + reversed;
    }
    storeInt(a.y, out, index);
  }
};

// Calls visit(out) for each output whose window holds input element `at`, in output order. Along
// a dimension, output o = (coordinate + pad - k * dilation) / stride grows as the kernel offset k
// falls, so the offsets are visited from the last down, the last dimension fastest.
template <typename Visit>
TPUSIM_HD void forCoveringOutputs(const PoolArgs& a, int64_t at, Visit visit) {
  const int64_t plane = planeSize(a.x_spatial, a.rank);
  const int64_t first_out = at / plane * planeSize(a.y_spatial, a.rank);
  int64_t coordinate[kMaxPoolRank], k[kMaxPoolRank];
  int64_t rest = at % plane;
  for (int d = a.rank - 1; d >= 0; --d) {
    coordinate[d] = rest % a.x_spatial[d];
    rest /= a.x_spatial[d];
    k[d] = a.kernel[d] - 1;
  }
  for (;;) {
    bool covers = true;
    int64_t linear = 0;
    for (int d = 0; d < a.rank && covers; ++d) {
      const int64_t offset = coordinate[d] + a.pads[d] - k[d] * a.dilations[d];
      covers = offset >= 0 && offset % a.strides[d] == 0 && offset / a.strides[d] < a.y_spatial[d];
      linear = linear * a.y_spatial[d] + offset / a.strides[d];
    }
    if (covers) visit(first_out + linear);
    int d = a.rank - 1;
    for (; d >= 0 && k[d] == 0; --d) k[d] = a.kernel[d] - 1;
    if (d < 0) return;
    --k[d];
  }
}

// One thread per input element: the gradients of the outputs whose windows hold it (max: of those
// whose first maximum it is), added in output order as the CPU executor adds them.
struct PoolGradKernel {
  PoolArgs a;
  TPUSIM_HD void operator()(int64_t at) const {
    float sum = 0;
    forCoveringOutputs(a, at, [&](int64_t out) {
      const float d = loadFloat(a.y, out);
      if (!a.max) {
        sum += d / static_cast<float>(forWindow(a, out, [](int64_t) {}));
      } else if (windowArgmax(a, out) == at) {
        sum += d;
      }
    });
    a.dx[at] = sum;
  }
};

}  // namespace tpusim::reference::cuda
