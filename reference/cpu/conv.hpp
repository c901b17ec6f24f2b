// 2-D convolution on the CPU, forward and both gradients, by direct loops.
// The contract (tests/reference/conv_test.cpp): each output element sums its
// terms from zero in T, every product and sum rounded, in a fixed order --
// y[n, m, oh, ow] over (c, kh, kw), dx[n, c, h, w] over (m, oh, ow) and
// dw[m, c, kh, kw] over (n, oh, ow), increasing -- skipping the terms that
// fall in the padding: the order of a walk of the (n, m, oh, ow, c, kh, kw)
// index space. The CUDA backend's host device runs these passes too.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "frontend/ir/graph.hpp"

namespace tpusim::reference {

struct ConvShapes {
  ir::Shape x;  // [N, C, H, W]
  ir::Shape w;  // [M, C / group, KH, KW]
  ir::Shape y;  // [N, M, OH, OW]
};

// Values are held as double and accumulated in T (float or double; see kernels.hpp). Each
// pass splits its output over `threads` threads, whole output elements to a thread, so the
// bits do not depend on the thread count.
template <typename T>
void convForward(std::span<const double> x, std::span<const double> w, std::span<double> y, const ConvShapes& shapes,
                 const ir::ConvGeometry& geometry, int threads);
template <typename T>
void convGradInput(std::span<const double> dy, std::span<const double> w, std::span<double> dx,
                   const ConvShapes& shapes, const ir::ConvGeometry& geometry, int threads);
template <typename T>
void convGradWeight(std::span<const double> x, std::span<const double> dy, std::span<double> dw,
                    const ConvShapes& shapes, const ir::ConvGeometry& geometry, int threads);

}  // namespace tpusim::reference
