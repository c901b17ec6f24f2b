// N-D graphs: broadcasting, batched matmuls, convolutions and other ops, their gradients and lowering.
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "frontend/lower/lower.hpp"
#include "frontend/train/training_graph.hpp"
#include "sim/common/error.hpp"
#include "tests/support/op_types.hpp"

namespace tpusim {
namespace {

TEST(Broadcast, ShapesFollowNumpy) {
  EXPECT_EQ(ir::broadcastShapes({3, 4, 5}, {5}), (ir::Shape{3, 4, 5}));
  EXPECT_EQ(ir::broadcastShapes({3, 1, 5}, {4, 1}), (ir::Shape{3, 4, 5}));
  EXPECT_EQ(ir::broadcastShapes({}, {2, 3}), (ir::Shape{2, 3}));
  EXPECT_THROW(ir::broadcastShapes({3, 4}, {5}), Error);
}

TEST(Broadcast, BatchedMatMulShapes) {
  ir::Graph g;
  const int a = g.addInput("a", {2, 1, 3, 4}, DType::kF32, ir::TensorRole::kInput);
  const int b = g.addWeight("b", {5, 4, 6}, DType::kF32);
  EXPECT_EQ(g.tensor(g.matmul("mm", a, b, false, false)).shape, (ir::Shape{2, 5, 3, 6}));
  const int bt = g.addWeight("bt", {6, 4}, DType::kF32);
  EXPECT_EQ(g.tensor(g.matmul("mmt", a, bt, false, true)).shape, (ir::Shape{2, 1, 3, 6}));
  const int v = g.addWeight("v", {4}, DType::kF32);
  EXPECT_THROW(g.matmul("mv", a, v, false, false), Error);  // 1-D operands: not yet
}

// Every weight's gradient must have the weight's shape: the SGD builder checks it,
// so building the training graph is the test.
TEST(Broadcast, GradientsSumOverBroadcastDimensions) {
  ImportedModel model;
  ir::Graph& g = model.graph;
  const int x = g.addInput("x", {4, 3, 8}, DType::kF32, ir::TensorRole::kInput);
  const int w = g.addWeight("w", {8, 6}, DType::kF32);        // shared over the batch of 4
  const int bias = g.addWeight("bias", {1, 6}, DType::kF32);  // [1, N] broadcast
  const int gain = g.addWeight("gain", {3, 1}, DType::kF32);  // broadcast along N
  const int shift = g.addWeight("shift", {6}, DType::kF32);
  int h = g.matmul("mm", x, w, false, false);  // [4, 3, 6]
  h = g.add("add", h, bias);
  h = g.binary(ir::OpType::kMul, "mul", h, gain);
  h = g.binary(ir::OpType::kSub, "sub", h, shift);
  h = g.binary(ir::OpType::kDiv, "div", h, g.addWeight("den", {6}, DType::kF32));
  h = g.scale("scale", g.relu("relu", h), 0.5);
  g.markOutput(g.reshape("flat", h, {12, 6}));
  model.batch = 12;
  const ir::Graph training = buildTrainingGraph(model, TrainingOptions{});
  int updates = 0;
  for (const ir::Op& op : training.ops()) updates += op.type == ir::OpType::kSgdUpdate;
  EXPECT_EQ(updates, 5);
  // It lowers, and every reshape is a view that moves no data.
  const program::Program program =
      lowerToProgram(training, HardwareParams::load("tpuv4"), LowerOptions{"t", "training", 12});
  const testing::OpTypes types(program.chips(0));
  for (const auto& ins : program.chips(0).instructions()) EXPECT_NE(types.of(ins), "Reshape");
}

TEST(Broadcast, BatchedMatMulSplitsTheBatchOverCores) {
  ir::Graph g;
  const int a = g.addInput("a", {6, 32, 64}, DType::kF32, ir::TensorRole::kInput);
  const int b = g.addInput("b", {6, 64, 16}, DType::kF32, ir::TensorRole::kInput);
  g.markOutput(g.matmul("bmm", a, b, false, false));
  const program::Program program = lowerToProgram(g, HardwareParams::load("tpuv4"), LowerOptions{"t", "inference", 6});
  uint64_t flops = 0;
  int per_core[2] = {0, 0};
  for (const auto& ins : program.chips(0).instructions()) {
    if (ins.unit() != program::MXU) continue;
    flops += ins.flops();
    ++per_core[ins.core()];
  }
  EXPECT_EQ(flops, 2ull * 6 * 32 * 64 * 16);
  EXPECT_EQ(per_core[0], 3 * 4);  // 3 batch elements x 4 MXUs each
  EXPECT_EQ(per_core[1], 3 * 4);
}

}  // namespace
}  // namespace tpusim

namespace tpusim {
namespace {

TEST(Lowering, UnaryTransposeAndConstantsBecomeVectorWork) {
  ir::Graph g;
  const int x = g.addInput("x", {8, 16}, DType::kF32, ir::TensorRole::kInput);
  const int c = g.addConstant("c", {16}, DType::kF32);
  const int t = g.transpose("t", g.unary(ir::UnaryKind::kTanh, "tanh", g.add("add", x, c)), {});
  g.markOutput(t);
  const program::Program program = lowerToProgram(g, HardwareParams::load("tpuv5e"), LowerOptions{"t", "inference", 8});
  std::set<std::string> types;
  const testing::OpTypes type_of(program.chips(0));
  for (const auto& ins : program.chips(0).instructions()) {
    if (ins.unit() == program::VPU) types.insert(type_of.of(ins));
  }
  EXPECT_EQ(types, (std::set<std::string>{"Add", "Transpose", "Unary"}));
  bool constant_in_hbm = false;
  for (const auto& buffer : program.chips(0).buffers()) {
    constant_in_hbm = constant_in_hbm || (buffer.name() == "c" && buffer.space() == program::HBM);
  }
  EXPECT_TRUE(constant_in_hbm);
}

}  // namespace
}  // namespace tpusim

namespace tpusim {
namespace {

TEST(Lowering, ConvolutionsAreImplicitGemmsOnTheMxus) {
  // x [8, 16, 14, 14] * w [32, 8, 3, 3], 2 groups, pad 1: y [8, 32, 14, 14].
  ImportedModel model;
  ir::Graph& g = model.graph;
  const int x = g.addInput("x", {8, 16, 14, 14}, DType::kF32, ir::TensorRole::kInput);
  ir::ConvGeometry geometry;
  geometry.pads = {1, 1, 1, 1};
  geometry.group = 2;
  const int y = g.conv("conv", x, g.addWeight("w", {32, 8, 3, 3}, DType::kF32), geometry);
  g.markOutput(g.reshape("flat", y, {8, 32 * 14 * 14}));
  model.batch = 8;
  const ir::Graph training = buildTrainingGraph(model, TrainingOptions{});
  const program::Program program =
      lowerToProgram(training, HardwareParams::load("tpuv4"), LowerOptions{"c", "training", 8});
  std::map<std::string, uint64_t> flops;
  const testing::OpTypes types(program.chips(0));
  for (const auto& ins : program.chips(0).instructions()) {
    if (ins.unit() == program::MXU) flops[types.of(ins)] += ins.flops();
  }
  // Every pass does 2 x N x OH x OW x M x (C / group) x KH x KW flops.
  const uint64_t expected = 2ull * 8 * 14 * 14 * 32 * 8 * 3 * 3;
  EXPECT_EQ(flops["Conv"], expected);
  EXPECT_EQ(flops["ConvGradWeight"], expected);
  EXPECT_EQ(flops.count("ConvGradInput"), 0u);  // x is an input: no gradient for it
}

}  // namespace
}  // namespace tpusim
