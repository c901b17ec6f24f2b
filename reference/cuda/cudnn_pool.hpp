// Which poolings the GPU device hands to cuDNN (cudnnPoolingForward) instead of the project's
// kernel (kernels/pool.hpp): those cuDNN's pooling descriptor can state and whose result it
// defines as the CPU executor does. Plain C++, so that CI tests the choice.
#pragma once

#include <climits>

#include "reference/cuda/kernels/pool.hpp"

namespace tpusim::reference::cuda {

// A floating tensor with 2 or 3 spatial dimensions, sizes that fit an int, no dilation, each
// dimension's two pads alike and under its kernel (so no window lies wholly in the padding, where
// cuDNN and the CPU executor define the maximum apart), and the output sizes cuDNN derives: the
// floor of the window count (a ceil-mode window past them stays with the project's kernel).
inline bool cudnnPools(const PoolArgs& a) {
  if ((a.rank != 2 && a.rank != 3) || !isFloating(a.x.elem) || a.planes > INT_MAX) return false;
  for (int d = 0; d < a.rank; ++d) {
    const int64_t pad = a.pads[d], padded = a.x_spatial[d] + 2 * pad;
    if (a.dilations[d] != 1 || a.pads[d + a.rank] != pad || pad >= a.kernel[d] || padded > INT_MAX) return false;
    if (padded < a.kernel[d] || (padded - a.kernel[d]) / a.strides[d] + 1 != a.y_spatial[d]) return false;
  }
  return true;
}

}  // namespace tpusim::reference::cuda
