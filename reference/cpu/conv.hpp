// 2-D convolution on the CPU, forward and both gradients, by direct loops.
// All three walk the same (n, m, oh, ow, c, kh, kw) index space, so each
// output element accumulates its terms in a fixed order.
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

void convForward(std::span<const float> x, std::span<const float> w, std::span<float> y, const ConvShapes& shapes,
                 const ir::ConvGeometry& geometry, int threads);
void convGradInput(std::span<const float> dy, std::span<const float> w, std::span<float> dx, const ConvShapes& shapes,
                   const ir::ConvGeometry& geometry);
void convGradWeight(std::span<const float> x, std::span<const float> dy, std::span<float> dw, const ConvShapes& shapes,
                    const ir::ConvGeometry& geometry);

}  // namespace tpusim::reference
