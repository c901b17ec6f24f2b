// Elementwise fusion: which ops join a group, and what the fused lowering saves (closed forms).
#include "frontend/passes/fusion.hpp"

#include <map>

#include <gtest/gtest.h>

#include "frontend/compile.hpp"
#include "frontend/lower/lower.hpp"
#include "traces/program_format.hpp"

namespace tpusim {
namespace {

struct DmaBytes {
  uint64_t loaded = 0, stored = 0;
};

DmaBytes dmaBytes(const program::Program& program) {
  DmaBytes bytes;
  for (const auto& ins : program.chips(0).instructions()) {
    if (ins.has_dma()) (ins.dma().dst() == program::VMEM ? bytes.loaded : bytes.stored) += ins.dma().bytes();
  }
  return bytes;
}

HardwareParams oneCore() {
  HardwareParams hw = HardwareParams::load("tpuv4");
  hw.set("chip.tensor_cores", "1");
  return hw;
}

// y = relu(x w + b), x [4096, 1024], w [1024, 1024], b [1024].
ir::Graph denseRelu() {
  ir::Graph g;
  const int x = g.addInput("x", {4096, 1024}, DType::kF32, ir::TensorRole::kInput);
  const int w = g.addWeight("w", {1024, 1024}, DType::kF32);
  const int b = g.addWeight("b", {1024}, DType::kF32);
  const int sum = g.add("bias", g.matmul("mm", x, w, false, false), b);
  g.markOutput(g.relu("relu", sum));
  return g;
}

TEST(Fusion, BiasAndReluJoinTheMatmulEpilogue) {
  const ir::Graph fused = fuseElementwise(denseRelu());
  ASSERT_EQ(fused.ops().size(), 3u);
  for (const ir::Op& op : fused.ops()) EXPECT_EQ(op.fusion_group, 0) << op.name;
  const std::vector<bool> on_chip = onChipOnly(fused);
  EXPECT_TRUE(on_chip[static_cast<size_t>(fused.ops()[0].outputs[0])]);   // the product
  EXPECT_TRUE(on_chip[static_cast<size_t>(fused.ops()[1].outputs[0])]);   // the biased sum
  EXPECT_FALSE(on_chip[static_cast<size_t>(fused.ops()[2].outputs[0])]);  // the output
}

TEST(Fusion, FusedLoweringMovesEachTensorOnce) {
  const HardwareParams hw = oneCore();
  const uint64_t x = 4096ull * 1024 * 4, w = 1024ull * 1024 * 4, b = 1024 * 4, y = 4096ull * 1024 * 4;
  const DmaBytes fused = dmaBytes(compileGraph(denseRelu(), hw, LowerOptions{"t", "inference", 1}).program);
  EXPECT_EQ(fused.loaded, x + w + b);  // the bias is loaded once and kept beside the tiles
  EXPECT_EQ(fused.stored, y);
  // Unfused, the product and the sum each go out to HBM and come back.
  const DmaBytes unfused = dmaBytes(lowerToProgram(denseRelu(), hw, LowerOptions{"t", "inference", 1}));
  EXPECT_EQ(unfused.loaded, x + w + b + 2 * y);
  EXPECT_EQ(unfused.stored, 3 * y);
}

TEST(Fusion, AFusedCastIsNeverWrittenItsReadersLoadItsInput) {
  // x f16 [1024, 1024] -> Cast f32 -> Relu: the relu loads x's 2 MiB (not 4 MiB of f32) and
  // converts it; the cast has no instruction of its own.
  ir::Graph g;
  const int x = g.addInput("x", {1024, 1024}, DType::kF16, ir::TensorRole::kInput);
  g.markOutput(g.relu("relu", g.cast("wide", x, DType::kF32)));
  const program::Program program = compileGraph(g, oneCore(), LowerOptions{"t", "inference", 1}).program;
  const DmaBytes moved = dmaBytes(program);
  EXPECT_EQ(moved.loaded, 1024ull * 1024 * 2);
  EXPECT_EQ(moved.stored, 1024ull * 1024 * 4);
  for (const auto& ins : program.chips(0).instructions()) EXPECT_NE(ins.op(), "wide");
}

TEST(Fusion, AnElementwiseOpOnlyAReductionReadsRunsInsideIt) {
  // RMS norm's mean of squares: x f16 [256, 1024] -> Cast f32 -> Mul(x, x) -> mean over axis 1.
  // The reduction loads x's 512 KiB once and squares it per tile; the squares never exist.
  ir::Graph g;
  const int x = g.addInput("x", {256, 1024}, DType::kF16, ir::TensorRole::kInput);
  const int wide = g.cast("wide", x, DType::kF32);
  const int squares = g.binary(ir::OpType::kMul, "squares", wide, wide);
  const int mean = g.reduce("mean", squares, ir::Reduction::kMean, {1}, true);
  g.markOutput(g.binary(ir::OpType::kDiv, "scaled", wide, mean));
  const std::vector<bool> prologues = reductionPrologues(g);
  EXPECT_TRUE(prologues[static_cast<size_t>(squares)]);
  EXPECT_FALSE(prologues[static_cast<size_t>(wide)]);  // read by the Div as well
  const program::Program program = compileGraph(g, oneCore(), LowerOptions{"t", "inference", 1}).program;
  uint64_t reduce_loads = 0, reduce_ops = 0;
  for (const auto& ins : program.chips(0).instructions()) {
    EXPECT_NE(ins.op(), "squares");
    if (ins.op() != "mean") continue;
    if (ins.has_dma() && ins.dma().dst() == program::VMEM) reduce_loads += ins.dma().bytes();
    if (ins.has_vector()) reduce_ops = ins.vector().ops_per_element();
  }
  EXPECT_EQ(reduce_loads, 256ull * 1024 * 2);
  // Per element: the square (1), the sum (1), and x converted from f16 (vpu.f16_unpack_ops).
  EXPECT_EQ(reduce_ops, 2 + static_cast<uint64_t>(oneCore().config().vpu().f16_unpack_ops()));
}

// Layer norm as the ONNX importer writes it, over x f16 [rows, width] cast to f32.
ir::Graph layerNorm(int64_t rows, int64_t width) {
  ir::Graph g;
  const int x = g.addInput("x", {rows, width}, DType::kF16, ir::TensorRole::kInput);
  const int eps = g.addConstant("eps", {}, DType::kF32);
  const int wide = g.cast("wide", x, DType::kF32);
  const int mean = g.reduce("mean", wide, ir::Reduction::kMean, {1}, true);
  const int centered = g.binary(ir::OpType::kSub, "centered", wide, mean);
  const int squares = g.binary(ir::OpType::kMul, "squares", centered, centered);
  const int variance = g.reduce("variance", squares, ir::Reduction::kMean, {1}, true);
  const int stddev = g.unary(ir::UnaryKind::kSqrt, "stddev", g.add("var_eps", variance, eps));
  const int inv = g.unary(ir::UnaryKind::kReciprocal, "inv", stddev);
  g.markOutput(g.binary(ir::OpType::kMul, "normalized", centered, inv));
  return g;
}

TEST(Fusion, LayerNormRecomputesXMinusMeanInsteadOfStoringIt) {
  // x - mean is copied for the normalizing Mul; the original runs inside the variance's
  // reduction with the squares. Each of the three passes (mean, variance, normalize) loads
  // x's f16 once; only the output (and the [rows, 1] statistics) are stored.
  const int64_t rows = 256, width = 1024;
  const ir::Graph fused = fuseElementwise(layerNorm(rows, width));
  std::map<std::string, const ir::Op*> by_name;
  for (const ir::Op& op : fused.ops()) by_name[op.name] = &op;
  ASSERT_TRUE(by_name.count("centered.recomputed"));
  EXPECT_EQ(by_name["normalized"]->fusion_group, by_name["centered.recomputed"]->fusion_group);
  const std::vector<bool> prologues = reductionPrologues(fused);
  EXPECT_TRUE(prologues[static_cast<size_t>(by_name["centered"]->outputs[0])]);
  EXPECT_TRUE(prologues[static_cast<size_t>(by_name["squares"]->outputs[0])]);
  const program::Program program =
      compileGraph(layerNorm(rows, width), oneCore(), LowerOptions{"t", "inference", 1}).program;
  const DmaBytes moved = dmaBytes(program);
  const uint64_t x = rows * width * 2, y = rows * width * 4, stats = rows * 4;
  // Loads: x three times, the mean (by the variance and the normalizing group), the
  // inverse (by the group) and epsilon's scalar. Stores: the mean, the variance, the
  // inverse, the output.
  EXPECT_EQ(moved.loaded, 3 * x + 2 * stats + stats + stats + 4);
  EXPECT_EQ(moved.stored, y + 3 * stats);
}

TEST(Fusion, ABroadcastOperandIsReadWhereItIs) {
  ir::Graph g;
  const int x = g.addInput("x", {64, 32}, DType::kF32, ir::TensorRole::kInput);
  const int s = g.addInput("s", {1, 32}, DType::kF32, ir::TensorRole::kInput);
  const int wide = g.broadcastTo("wide", s, {64, 32});
  g.markOutput(g.binary(ir::OpType::kMul, "scaled", x, wide));
  const ir::Graph fused = fuseElementwise(g);
  ASSERT_EQ(fused.ops().size(), 1u);
  EXPECT_EQ(fused.ops()[0].inputs, (std::vector<int>{x, s}));
  // A BroadcastTo read by an op with no other full operand stays (its output keeps the shape).
  ir::Graph alone;
  const int t = alone.addInput("t", {1, 32}, DType::kF32, ir::TensorRole::kInput);
  alone.markOutput(alone.relu("r", alone.broadcastTo("b", t, {64, 32})));
  EXPECT_EQ(fuseElementwise(alone).ops().size(), 2u);
}

TEST(Fusion, AnOpJoiningAGroupTakesTheLoneProducerOfItsOtherOperand) {
  ir::Graph g;
  const int x = g.addInput("x", {64, 64}, DType::kF32, ir::TensorRole::kInput);
  const int y = g.addInput("y", {64, 64}, DType::kF32, ir::TensorRole::kInput);
  const int s = g.addInput("s", {1, 64}, DType::kF32, ir::TensorRole::kInput);
  const int a = g.relu("a", x);
  const int q = g.binary(ir::OpType::kMul, "q", y, s);  // leads nothing: no producer, no sibling
  g.markOutput(g.add("sum", a, q));                     // joins a's group, and takes q along
  const ir::Graph fused = fuseElementwise(g);
  for (const ir::Op& op : fused.ops()) {
    ASSERT_GE(op.fusion_group, 0) << op.name;
    EXPECT_EQ(fused.ops()[static_cast<size_t>(op.fusion_group)].name, "a") << op.name;
  }
  EXPECT_TRUE(onChipOnly(fused)[static_cast<size_t>(q)]);  // q never goes to HBM
}

TEST(Fusion, AReductionOverTheLeadingAxisRunsInTheGroupThatComputesItsInput) {
  // y = relu(x), x [4096, 256], and its column sums: one pass; x is loaded once, y stored
  // once, and each core's partial sums go through scratch to core 0, which adds them.
  ir::Graph g;
  const int x = g.addInput("x", {4096, 256}, DType::kF32, ir::TensorRole::kInput);
  const int y = g.relu("y", x);
  g.markOutput(y);
  g.markOutput(g.reduce("sums", y, ir::Reduction::kSum, {0}, false));
  const ir::Graph fused = fuseElementwise(g);
  for (const ir::Op& op : fused.ops()) EXPECT_EQ(op.fusion_group, 0) << op.name;
  HardwareParams hw = HardwareParams::load("tpuv4");
  const auto cores = static_cast<uint64_t>(hw.config().chip().tensor_cores());
  const DmaBytes moved = dmaBytes(compileGraph(g, hw, LowerOptions{"t", "inference", 1}).program);
  const uint64_t tensor = 4096ull * 256 * 4, sums = 256 * 4;
  EXPECT_EQ(moved.loaded, tensor + cores * sums);
  EXPECT_EQ(moved.stored, tensor + cores * sums + sums);
}

TEST(Fusion, AnElementwiseOpOnlyMatmulsReadIsComputedOnTheirOperandTiles) {
  // d = x + s (s one value per column), read by two matmuls: d never exists; each matmul
  // loads x and adds s per tile, s loaded once.
  ir::Graph g;
  const int x = g.addInput("x", {256, 128}, DType::kF32, ir::TensorRole::kInput);
  const int s = g.addInput("s", {1, 128}, DType::kF32, ir::TensorRole::kInput);
  const int w = g.addWeight("w", {128, 128}, DType::kF32);
  const int d = g.add("d", x, s);
  g.markOutput(g.matmul("first", d, w, false, false));
  g.markOutput(g.matmul("second", d, w, false, false));
  EXPECT_EQ(operandPrologues(g)[static_cast<size_t>(d)], x);
  const program::Program program = compileGraph(g, oneCore(), LowerOptions{"t", "inference", 1}).program;
  for (const auto& ins : program.chips(0).instructions()) EXPECT_NE(ins.op(), "d");
  const DmaBytes moved = dmaBytes(program);
  const uint64_t xs = 256 * 128 * 4, ws = 128 * 128 * 4, ss = 128 * 4, out = 256 * 128 * 4;
  EXPECT_EQ(moved.loaded, 2 * (xs + ws + ss));
  EXPECT_EQ(moved.stored, 2 * out);
}

TEST(Fusion, AReductionFirstInAMatmulsEpilogueLeavesTheOtherOperandsStreaming) {
  // y = x w, its column sums, and the column sums of y * qfactor: both reductions join the
  // matmul's group, the plain one first. qfactor (16 MiB, all of VMEM) must stream with the
  // tiles, not be held whole as if it had the first reduction's shape.
  ir::Graph g;
  const int x = g.addInput("x", {16384, 256}, DType::kF32, ir::TensorRole::kInput);
  const int q = g.addInput("qfactor", {16384, 256}, DType::kF32, ir::TensorRole::kInput);
  const int w = g.addWeight("w", {256, 256}, DType::kF32);
  const int y = g.matmul("y", x, w, false, false);
  g.markOutput(g.reduce("sums", y, ir::Reduction::kSum, {0}, false));
  const int scaled = g.binary(ir::OpType::kMul, "scaled", y, q);
  g.markOutput(g.reduce("scaled_sums", scaled, ir::Reduction::kSum, {0}, false));
  const ir::Graph fused = fuseElementwise(g);
  for (const ir::Op& op : fused.ops()) EXPECT_EQ(op.fusion_group, 0) << op.name;
  const program::Program program = compileGraph(g, oneCore(), LowerOptions{"t", "inference", 1}).program;
  uint64_t q_loaded = 0;
  for (const auto& ins : program.chips(0).instructions()) {
    if (ins.has_dma() && ins.dma().dst() == program::VMEM &&
        instructionName(ins).find("qfactor") != std::string::npos) {
      q_loaded += ins.dma().bytes();
    }
  }
  EXPECT_EQ(q_loaded, 16384ull * 256 * 4);
}

TEST(Fusion, AnOperandMadeAfterTheLeaderMovesTheGroupToTheOp) {
  ir::Graph g;
  const int x = g.addInput("x", {64, 64}, DType::kF32, ir::TensorRole::kInput);
  const int w = g.addWeight("w", {64, 64}, DType::kF32);
  const int mm = g.matmul("mm", x, w, false, false);
  const int other = g.unary(ir::UnaryKind::kExp, "other", x);  // not elementwise-after-mm: a new leader
  const int later = g.matmul("later", other, w, false, false);
  g.markOutput(g.add("sum", mm, later));  // `later` comes after mm: mm's group runs where sum was
  const ir::Graph fused = fuseElementwise(g);
  std::vector<std::string> order;
  for (const ir::Op& op : fused.ops()) {
    order.push_back(op.name);
    if (op.name == "sum") {
      EXPECT_EQ(fused.ops()[static_cast<size_t>(op.fusion_group)].name, "mm");
    }
  }
  EXPECT_EQ(order, (std::vector<std::string>{"other", "later", "mm", "sum"}));
}

TEST(Fusion, AGroupReadBeforeTheConsumerCannotMoveSoItJoinsTheOtherProducer) {
  ir::Graph g;
  const int x = g.addInput("x", {64, 64}, DType::kF32, ir::TensorRole::kInput);
  const int w = g.addWeight("w", {64, 64}, DType::kF32);
  const int mm = g.matmul("mm", x, w, false, false);
  const int reader = g.matmul("reader", mm, w, false, false);  // reads mm's output before `sum`
  g.markOutput(g.add("sum", mm, reader));
  const ir::Graph fused = fuseElementwise(g);
  for (const ir::Op& op : fused.ops()) {
    if (op.name == "sum") {
      EXPECT_EQ(fused.ops()[static_cast<size_t>(op.fusion_group)].name, "reader");
    }
  }
}

TEST(Fusion, SiblingsReadingOneTensorShareAKernel) {
  ir::Graph g;
  const int x = g.addInput("x", {64, 64}, DType::kF32, ir::TensorRole::kInput);
  const int positive = g.relu("positive", x);       // leads: x has no producer
  const int negated = g.scale("negated", x, -1.0);  // a sibling of `positive`, reading x
  g.markOutput(g.add("sum", positive, negated));
  const ir::Graph fused = fuseElementwise(g);
  for (const ir::Op& op : fused.ops()) {
    ASSERT_GE(op.fusion_group, 0) << op.name;
    EXPECT_EQ(fused.ops()[static_cast<size_t>(op.fusion_group)].name, "positive") << op.name;
  }
}

TEST(Fusion, ACastFusesIntoTheOpsThatReadIt) {
  ir::Graph g;
  const int x = g.addInput("x", {64, 64}, DType::kF16, ir::TensorRole::kInput);
  const int w = g.addWeight("w", {64, 64}, DType::kF32);
  const int wide = g.cast("wide", x, DType::kF32);  // read by a reduction, an elementwise op and a matmul
  const int total = g.reduce("total", wide, ir::Reduction::kSum, {1}, true);
  const int centered = g.binary(ir::OpType::kSub, "centered", wide, total);
  g.markOutput(g.matmul("product", g.cast("c16", centered, DType::kF16), g.cast("w16", w, DType::kF16), false, false));
  g.markOutput(g.relu("kept", g.cast("output", x, DType::kF32)));
  const int shown = g.cast("shown", x, DType::kF32);  // a graph output: written to HBM
  g.markOutput(shown);
  const std::vector<int> sources = operandCastSources(g);
  EXPECT_EQ(sources[static_cast<size_t>(wide)], x);
  EXPECT_EQ(sources[static_cast<size_t>(shown)], -1);
  const ir::Graph fused = fuseElementwise(g);
  for (const ir::Op& op : fused.ops()) {
    if (op.name == "wide" || op.name == "w16") {
      EXPECT_EQ(op.fusion_group, -1) << op.name;
    }
  }
}

TEST(Fusion, AnInPlaceUpdateInBetweenKeepsTheOpOut) {
  ir::Graph g;
  const int x = g.addInput("x", {64}, DType::kF32, ir::TensorRole::kInput);
  const int w = g.addWeight("w", {64}, DType::kF32);
  const int first = g.relu("first", x);
  g.sgdUpdate("w.sgd", w, first, 0.1);  // overwrites w
  g.markOutput(g.add("reads_w", first, w));
  const ir::Graph fused = fuseElementwise(g);
  for (const ir::Op& op : fused.ops()) {
    if (op.name == "reads_w") {
      EXPECT_EQ(op.fusion_group, -1);  // would read w before its update
    }
  }
}

TEST(Fusion, GroupsStopAtTheSizeLimit) {
  ir::Graph g;
  int x = g.addInput("x", {64}, DType::kF32, ir::TensorRole::kInput);
  for (size_t i = 0; i < 2 * kMaxFusedOps; ++i) {
    std::string name = "relu";
    name.append(std::to_string(i));
    x = g.relu(name, x);
  }
  g.markOutput(x);
  const ir::Graph fused = fuseElementwise(g);
  std::map<int, size_t> sizes;
  for (const ir::Op& op : fused.ops()) ++sizes[op.fusion_group];
  for (const auto& [group, size] : sizes) EXPECT_LE(size, kMaxFusedOps) << group;
  EXPECT_EQ(sizes.size(), 2u);
}

}  // namespace
}  // namespace tpusim
