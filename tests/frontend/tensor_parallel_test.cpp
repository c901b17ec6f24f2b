// The tensor_parallel pass (Megatron column/row splits of matmul pairs,
// frontend/passes/tensor_parallel.hpp) and its Programs: 1/T of the MXU work and of
// the split weights per chip, all-reduces over groups of consecutive chips.
#include "frontend/passes/tensor_parallel.hpp"

#include <gtest/gtest.h>

#include <string>

#include "frontend/compile.hpp"
#include "frontend/passes/data_parallel.hpp"
#include "frontend/train/training_graph.hpp"
#include "sim/common/error.hpp"
#include "tests/support/onnx_builder.hpp"

namespace tpusim {
namespace {

using ir::OpType;

// x[32, 16] -> fc1 (w1 [8, 16]) -> relu -> fc2 (w2 [4, 8]) -> softmax cross-entropy.
ir::Graph mlpGraph() {
  auto b = testing::OnnxBuilder::mlp();
  const ImportedModel model = importOnnxModel(b.model(), OnnxImportOptions{32});
  return buildTrainingGraph(model, TrainingOptions{});
}

const ir::Tensor& tensorNamed(const ir::Graph& g, const std::string& name) {
  for (const ir::Tensor& t : g.tensors()) {
    if (t.name == name) return t;
  }
  throw std::runtime_error("no tensor " + name);
}

uint64_t weightBytes(const ir::Graph& g) {
  uint64_t bytes = 0;
  for (const ir::Tensor& t : g.tensors()) {
    bytes += t.role == ir::TensorRole::kWeight && g.producer(t.id) == nullptr ? t.bytes() : 0;
  }
  return bytes;
}

TEST(TensorParallel, TheMlpPairSplitsByColumnsThenRows) {
  const ir::Graph g = mlpGraph();
  TensorParallelSplit split;
  const ir::Graph tp = splitTensorParallel(g, 2, &split);
  ASSERT_EQ(split.column.size(), 1u);
  ASSERT_EQ(split.row.size(), 1u);
  EXPECT_TRUE(split.replicated.empty());
  // fc1 holds half of its output columns (w1 is [out, in]) and of its bias; fc2 half of its input rows.
  EXPECT_EQ(tensorNamed(tp, "w1").shape, (ir::Shape{4, 16}));
  EXPECT_EQ(tensorNamed(tp, "b1").shape, (ir::Shape{4}));
  EXPECT_EQ(tensorNamed(tp, "w2").shape, (ir::Shape{4, 4}));
  EXPECT_EQ(tensorNamed(tp, "b2").shape, (ir::Shape{4}));
  // (8 x 16 + 8 + 4 x 8) / 2 + 4 floats of weights per chip.
  EXPECT_EQ(weightBytes(g), (8u * 16 + 8 + 4 * 8 + 4) * 4);
  EXPECT_EQ(weightBytes(tp), ((8u * 16 + 8 + 4 * 8) / 2 + 4) * 4);
  // One all-reduce: fc2's partial sums, forward, over 2 consecutive chips, right after fc2.
  // (x needs no gradient, so fc1's input gradient, the backward all-reduce, is not computed.)
  int all_reduces = 0;
  for (size_t i = 0; i < tp.ops().size(); ++i) {
    const ir::Op& op = tp.ops()[i];
    if (op.type != OpType::kAllReduce) continue;
    ++all_reduces;
    EXPECT_EQ(op.replicas, 2);
    EXPECT_EQ(op.group_stride, 1);
    EXPECT_EQ(tp.ops()[i - 1].name, split.row[0]);
    EXPECT_EQ(tp.tensor(op.outputs[0]).shape, (ir::Shape{32, 4}));
  }
  EXPECT_EQ(all_reduces, 1);
}

TEST(TensorParallel, TheInputGradientOfAColumnSplitIsAllReducedBackward) {
  // Two pairs: the second one's input is an activation that needs a gradient.
  testing::OnnxBuilder b;
  b.input("x", {-1, 16}).weight("w0", {16, 16}).weight("w1", {16, 16}).weight("w2", {8, 16}).weight("w3", {4, 8});
  b.gemm("x", "w0", "", "h0");
  b.node("Relu", {"h0"}, "a0");
  b.gemm("a0", "w1", "", "h1");
  b.node("Relu", {"h1"}, "a1");
  b.gemm("a1", "w2", "", "h2");
  b.node("Relu", {"h2"}, "a2");
  b.gemm("a2", "w3", "", "logits");
  b.output("logits");
  const ImportedModel model = importOnnxModel(b.model(), OnnxImportOptions{32});
  TensorParallelSplit split;
  const ir::Graph tp = splitTensorParallel(buildTrainingGraph(model, TrainingOptions{}), 2, &split);
  EXPECT_EQ(split.column.size(), 2u);
  EXPECT_EQ(split.row.size(), 2u);
  EXPECT_TRUE(split.replicated.empty());
  // Forward: each row-split output. Backward: the input gradient of the second column split
  // (that of the first is x's, which training does not compute).
  // Each takes the phase of the op whose partial sums it adds.
  int forward = 0, backward = 0;
  for (const ir::Op& op : tp.ops()) {
    if (op.type != OpType::kAllReduce) continue;
    const bool gradient = tp.tensor(op.outputs[0]).role == ir::TensorRole::kGradient;
    (gradient ? backward : forward)++;
    EXPECT_EQ(op.phase, gradient ? ir::Phase::kBackward : ir::Phase::kForward) << op.name;
    EXPECT_EQ(op.phase, tp.producer(op.inputs[0])->phase) << op.name;
  }
  EXPECT_EQ(forward, 2);
  EXPECT_EQ(backward, 1);
}

uint64_t mxuFlops(const program::Program& p) {
  uint64_t flops = 0;
  for (const program::Instruction& ins : p.chips(0).instructions())
    flops += ins.unit() == program::MXU ? ins.flops() : 0;
  return flops;
}

TEST(TensorParallel, EachChipDoesOneTthOfTheMxuWorkAndHoldsOneTthOfTheSplitWeights) {
  const HardwareParams hw = HardwareParams::load("tpuv4");
  LowerOptions one{"t", "training", 32};
  const program::Program single = compileGraph(mlpGraph(), hw, one).program;
  for (const int64_t t : {2, 4}) {
    LowerOptions options{"t", "training", 32};
    options.topology = Topology::parse(TopologyKind::kTorus3d, std::to_string(t) + "x1x1");
    options.tensor_parallel = t;
    const program::Program split = compileGraph(mlpGraph(), hw, options).program;
    EXPECT_EQ(split.tensor_parallel(), static_cast<uint32_t>(t));
    // Every matmul of the step (forward, both gradients) is split, so the MXU's FLOPs divide by T.
    ASSERT_GT(mxuFlops(single), 0u);
    EXPECT_EQ(mxuFlops(split) * static_cast<uint64_t>(t), mxuFlops(single)) << t;
    EXPECT_LT(split.chips(0).memory().persistent_bytes(), single.chips(0).memory().persistent_bytes());
    // The one collective: fc2's output over the T chips of the group (tp x dp = T chips, dp 1).
    int collectives = 0;
    for (const program::Instruction& ins : split.chips(0).instructions()) {
      if (!ins.has_collective()) continue;
      ++collectives;
      EXPECT_EQ(ins.collective().replicas(), static_cast<uint32_t>(t));
      EXPECT_EQ(ins.collective().bytes(), 32u * 4 * 4);
    }
    EXPECT_EQ(collectives, 1);
  }
}

TEST(TensorParallel, DataParallelGroupsTakeOneChipOfEachTensorParallelGroup) {
  LowerOptions options{"t", "training", 32};
  options.topology = Topology::parse(TopologyKind::kTorus3d, "2x2x1");
  options.tensor_parallel = 2;
  const program::Program p = compileGraph(mlpGraph(), HardwareParams::load("tpuv4"), options).program;
  int tp_groups = 0, dp_groups = 0;
  for (const program::Instruction& ins : p.chips(0).instructions()) {
    if (!ins.has_collective()) continue;
    EXPECT_EQ(ins.collective().replicas(), 2u);
    (ins.collective().group_stride() == 2 ? dp_groups : tp_groups)++;
  }
  EXPECT_EQ(tp_groups, 1);  // fc2's partial sums
  EXPECT_EQ(dp_groups, 4);  // the gradients of w1, b1, w2, b2
}

TEST(TensorParallel, AModelWithNothingToSplitEvenlyIsAnError) {
  try {
    splitTensorParallel(mlpGraph(), 3);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kUnsupported);
    const std::string what = error.what();
    EXPECT_EQ(what,
              "tensor parallel over 3 chips: no matmul pair splits evenly (w1 dimension 0 (8) does not divide by 3)");
  }
}

}  // namespace
}  // namespace tpusim
