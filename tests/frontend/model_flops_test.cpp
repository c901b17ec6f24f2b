// Model FLOPs: 2 per multiply-add of each matmul and convolution, none for recomputation.
#include <gtest/gtest.h>

#include "frontend/passes/model_flops.hpp"

namespace tpusim {
namespace {

TEST(ModelFlops, AMatMulIsTwiceItsMultiplyAddsWhicheverOperandIsTransposed) {
  ir::Graph g;
  const int a = g.addInput("a", {3, 64, 32}, DType::kF32, ir::TensorRole::kInput);  // batch 3 of 64 x 32
  const int b = g.addWeight("b", {32, 16}, DType::kF32);
  const int at = g.addInput("at", {32, 64}, DType::kF32, ir::TensorRole::kInput);
  g.markOutput(g.matmul("mm", a, b, false, false));
  g.markOutput(g.matmul("mm_t", at, b, true, false));  // (32 x 64)^T x 32 x 16
  EXPECT_EQ(modelFlopsOf(g, g.ops()[0]), 2u * 3 * 64 * 32 * 16);
  EXPECT_EQ(modelFlopsOf(g, g.ops()[1]), 2u * 64 * 32 * 16);
  EXPECT_EQ(modelFlops(g), 2u * 4 * 64 * 32 * 16);
}

TEST(ModelFlops, AGroupedConvolutionAndItsGradientsEachCostTheForwardsMultiplyAdds) {
  ir::Graph g;
  ir::ConvGeometry geometry;
  geometry.strides = {2, 2};
  geometry.pads = {1, 1, 1, 1};
  geometry.group = 2;
  const int x = g.addInput("x", {4, 8, 16, 16}, DType::kF32, ir::TensorRole::kInput);
  const int w = g.addWeight("w", {12, 4, 3, 3}, DType::kF32);  // 12 filters over 8 / 2 channels
  const int y = g.conv("conv", x, w, geometry);                 // [4, 12, 8, 8]
  const int dx = g.convGradInput("conv.grad_x", y, w, {4, 8, 16, 16}, geometry);
  const int dw = g.convGradWeight("conv.grad_w", x, y, {12, 4, 3, 3}, geometry);
  g.markOutput(dx);
  g.markOutput(dw);
  const uint64_t forward = 2ull * (4 * 12 * 8 * 8) * (4 * 3 * 3);
  for (const ir::Op& op : g.ops()) EXPECT_EQ(modelFlopsOf(g, op), forward) << op.name;
  EXPECT_EQ(modelFlops(g), 3 * forward);
}

TEST(ModelFlops, RecomputedAndVectorOpsCountNothing) {
  ir::Graph g;
  const int a = g.addInput("a", {64, 32}, DType::kF32, ir::TensorRole::kInput);
  const int b = g.addWeight("b", {32, 16}, DType::kF32);
  const int y = g.relu("relu", g.matmul("mm", a, b, false, false));
  g.markOutput(g.matmul("mm.remat", a, b, false, false));
  g.markOutput(y);
  EXPECT_EQ(modelFlops(g), 2u * 64 * 32 * 16);
}

}  // namespace
}  // namespace tpusim
