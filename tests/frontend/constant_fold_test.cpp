// The constant_fold pass: each rule on a small graph, the cases it must leave alone, a
// golden IR of a trained MLP with exported-style transposes, numerics on the CPU
// executor, and the weight transposes of the BERT trace.
#include "frontend/passes/constant_fold.hpp"

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

#include "frontend/import/onnx_import.hpp"
#include "frontend/train/training_graph.hpp"
#include "reference/cpu/cpu_executor.hpp"

namespace tpusim {
namespace {

using ir::Graph;
using ir::OpType;
using ir::TensorRole;

int countOps(const Graph& graph, OpType type) {
  int count = 0;
  for (const ir::Op& op : graph.ops()) count += op.type == type;
  return count;
}

const ir::Op& opNamed(const Graph& graph, const std::string& name) {
  for (const ir::Op& op : graph.ops()) {
    if (op.name == name) return op;
  }
  throw std::runtime_error("no op " + name);
}

TEST(ConstantFold, TransposeOfAWeightBecomesTheMatMulFlag) {
  Graph g;
  const int x = g.addInput("x", {4, 3}, DType::kF32, TensorRole::kInput);
  const int w = g.addWeight("w", {5, 3}, DType::kF32);
  const int wt = g.transpose("fc/Transpose", w, {1, 0});
  g.markOutput(g.matmul("fc/MatMul", x, wt, false, false));
  const Graph out = constantFold(g);
  ASSERT_EQ(out.ops().size(), 1u) << out.toString();
  const ir::Op& mm = out.ops()[0];
  EXPECT_EQ(mm.name, "fc/MatMul");
  EXPECT_EQ(mm.inputs, (std::vector<int>{x, w}));
  EXPECT_FALSE(mm.transpose_a);
  EXPECT_TRUE(mm.transpose_b);
}

TEST(ConstantFold, EveryMatMulReaderTakesTheFlagAndABatchedLhsStaysStacked) {
  Graph g;
  const int x = g.addInput("x", {2, 4, 3}, DType::kF32, TensorRole::kInput);
  const int w = g.addWeight("w", {5, 3}, DType::kF32);
  const int wt = g.transpose("t", w, {1, 0});
  const int y = g.matmul("y", x, wt, false, false);  // [2,4,5]
  const int z = g.matmul("z", y, wt, false, true);   // [2,4,3]: reads wt transposed already
  const int xt = g.transpose("xt", x, {0, 2, 1});    // [2,3,4]
  const int q = g.matmul("q", xt, g.addWeight("v", {4, 6}, DType::kF32), false, false);
  g.markOutput(z);
  g.markOutput(q);
  const Graph out = constantFold(g);
  EXPECT_TRUE(opNamed(out, "y").transpose_b);
  EXPECT_FALSE(opNamed(out, "z").transpose_b);  // two transposes cancel
  EXPECT_EQ(opNamed(out, "z").inputs[1], w);
  // xt over an unbatched rhs: a transposed batched lhs would not stack its rows in the lowering.
  EXPECT_EQ(countOps(out, OpType::kTranspose), 1);
  EXPECT_FALSE(opNamed(out, "q").transpose_a);
}

TEST(ConstantFold, TransposeOfAProductSwapsItsOperands) {
  Graph g;
  const int a = g.addInput("a", {6, 4}, DType::kF32, TensorRole::kInput);
  const int b = g.addInput("b", {6, 5}, DType::kF32, TensorRole::kInput);
  const int p = g.matmul("grad/MatMul", a, b, true, false);  // a^T b: [4,5]
  const int t = g.transpose("grad/Transpose", p, {1, 0});    // [5,4]
  g.markOutput(t);
  const Graph out = constantFold(g);
  ASSERT_EQ(out.ops().size(), 1u) << out.toString();
  const ir::Op& mm = out.ops()[0];
  // (a^T b)^T = b^T a
  EXPECT_EQ(mm.name, "grad/MatMul");
  EXPECT_EQ(mm.inputs, (std::vector<int>{b, a}));
  EXPECT_TRUE(mm.transpose_a);
  EXPECT_FALSE(mm.transpose_b);
  EXPECT_EQ(mm.outputs, std::vector<int>{t});
  EXPECT_EQ(out.outputs(), std::vector<int>{t});
}

TEST(ConstantFold, LeavesTransposesWithOtherReadersOrOtherPerms) {
  Graph g;
  const int x = g.addInput("x", {4, 3}, DType::kF32, TensorRole::kInput);
  const int w = g.addWeight("w", {5, 3}, DType::kF32);
  const int wt = g.transpose("t", w, {1, 0});
  g.markOutput(g.matmul("mm", x, wt, false, false));
  g.markOutput(g.relu("relu", wt));  // not a MatMul
  const int c = g.addInput("c", {2, 3, 4}, DType::kF32, TensorRole::kInput);
  g.markOutput(g.matmul("mm2", g.transpose("rot", c, {1, 0, 2}), x, false, false));  // [3,2,4] x [4,3]
  const Graph out = constantFold(g);
  EXPECT_EQ(out.ops().size(), g.ops().size()) << out.toString();
}

TEST(ConstantFold, IdentitiesAreRemoved) {
  Graph g;
  const int x = g.addInput("x", {2, 3}, DType::kF32, TensorRole::kInput);
  int v = g.scale("scale1", x, 1.0);
  v = g.reshape("same_shape", v, {2, 3});
  v = g.transpose("no_perm", v, {0, 1});
  v = g.broadcastTo("same_broadcast", v, {2, 3}, TensorRole::kActivation);
  v = g.cast("same_dtype", v, DType::kF32);
  v = g.stridedSlice("everything", v, {0, 0}, {1, 1}, {2, 3});
  v = g.concat("one_input", {v}, 0);
  const int y = g.relu("relu", v);
  g.markOutput(y);
  const Graph out = constantFold(g);
  ASSERT_EQ(out.ops().size(), 1u) << out.toString();
  EXPECT_EQ(out.ops()[0].inputs, std::vector<int>{x});
}

TEST(ConstantFold, AnIdentityOutputKeepsItsNameOrItsOp) {
  Graph g;
  const int x = g.addInput("x", {2, 3}, DType::kF32, TensorRole::kInput);
  const int r = g.relu("relu", x);
  const int out1 = g.reshape("Identity", r, {2, 3});
  g.rename(out1, "logits");
  g.markOutput(out1);
  const int out2 = g.scale("copy", x, 1.0);  // an input can't become the output
  g.markOutput(out2);
  const Graph out = constantFold(g);
  ASSERT_EQ(out.ops().size(), 2u) << out.toString();
  EXPECT_EQ(out.outputs(), (std::vector<int>{r, out2}));
  EXPECT_EQ(out.tensor(r).name, "logits");
}

TEST(ConstantFold, ChainsMerge) {
  Graph g;
  const int x = g.addInput("x", {2, 3, 4}, DType::kF32, TensorRole::kInput);
  int v = g.reshape("r1", x, {6, 4});
  v = g.reshape("r2", v, {24});
  v = g.transpose("t0", g.reshape("r3", v, {2, 3, 4}), {1, 2, 0});  // r3 restores x's shape: gone
  v = g.transpose("t1", v, {2, 0, 1});                              // undoes t0: both gone
  v = g.scale("s1", v, 2.0);
  v = g.scale("s2", v, 0.25);
  const int y = g.transpose("t2", g.transpose("t3", v, {1, 0, 2}), {0, 2, 1});
  g.markOutput(y);
  const Graph out = constantFold(g);
  ASSERT_EQ(out.ops().size(), 2u) << out.toString();
  EXPECT_EQ(out.ops()[0].name, "s2");
  EXPECT_EQ(out.ops()[0].inputs, std::vector<int>{x});
  EXPECT_DOUBLE_EQ(out.ops()[0].scalar, 0.5);
  EXPECT_EQ(out.ops()[1].name, "t2");
  EXPECT_EQ(out.ops()[1].perm, (std::vector<int64_t>{1, 2, 0}));  // out[i] = x[t3[t2[i]]]
  EXPECT_EQ(out.tensor(y).shape, (ir::Shape{3, 4, 2}));
}

TEST(ConstantFold, NoReadMovesPastAnInPlaceUpdate) {
  // x' = SGD(x) overwrites x between the transpose and the product that reads it.
  Graph g;
  const int w = g.addWeight("w", {3, 3}, DType::kF32);
  const int a = g.addInput("a", {2, 3}, DType::kF32, TensorRole::kInput);
  const int wt = g.transpose("t", w, {1, 0});
  const int s = g.scale("copy", w, 1.0);
  g.markOutput(g.sgdUpdate("w.sgd", w, g.addInput("g", {3, 3}, DType::kF32, TensorRole::kGradient), 0.1));
  g.markOutput(g.matmul("mm", a, wt, false, false));
  g.markOutput(g.relu("relu", s));
  const Graph out = constantFold(g);
  EXPECT_EQ(out.ops().size(), g.ops().size()) << out.toString();
}

// A 8-16-3 MLP as PyTorch exports it: MatMul(x, Transpose(W)) per nn.Linear, a Dropout
// (an identity Reshape) and Gemm's alpha (a Scale by 1), trained with softmax
// cross-entropy and SGD.
Graph exportedMlp() {
  ImportedModel model;
  model.batch = 4;
  Graph& g = model.graph;
  const int x = g.addInput("x", {4, 8}, DType::kF32, TensorRole::kInput);
  const int w1 = g.addWeight("fc1.weight", {16, 8}, DType::kF32);
  const int b1 = g.addWeight("fc1.bias", {16}, DType::kF32);
  const int w2 = g.addWeight("fc2.weight", {3, 16}, DType::kF32);
  const int b2 = g.addWeight("fc2.bias", {3}, DType::kF32);
  int h = g.matmul("/fc1/MatMul", x, g.transpose("/fc1/Transpose", w1, {1, 0}), false, false);
  h = g.relu("/relu/Relu", g.add("/fc1/Add", h, b1));
  h = g.reshape("/dropout/Identity", h, {4, 16});
  h = g.scale("/fc2/alpha", g.matmul("/fc2/MatMul", h, g.transpose("/fc2/Transpose", w2, {1, 0}), false, false), 1.0);
  g.markOutput(g.add("/fc2/Add", h, b2));
  return buildTrainingGraph(model, TrainingOptions{});
}

TEST(ConstantFold, GoldenIrOfATrainedMlp) {
  const Graph graph = exportedMlp();
  const std::string text = constantFold(graph).toString();
  const std::string path = TPUSIM_SOURCE_DIR "/tests/golden/passes/constant_fold.txt";
  if (std::getenv("TPUSIM_UPDATE_GOLDEN")) {
    std::ofstream(path) << text;
  }
  std::ifstream file(path);
  ASSERT_TRUE(file) << path << " is missing; scripts/update-golden.sh writes it";
  std::stringstream golden;
  golden << file.rdbuf();
  EXPECT_EQ(text, golden.str()) << "regenerate with scripts/update-golden.sh after an intended change";
  // Both weight transposes and their gradient transposes, the Dropout and the alpha go.
  EXPECT_EQ(countOps(graph, OpType::kTranspose), 4);
  EXPECT_EQ(countOps(constantFold(graph), OpType::kTranspose), 0);
  EXPECT_EQ(constantFold(graph).ops().size(), graph.ops().size() - 4 - 2 - 2) << text;
}

// Runs both graphs on the same random feeds and compares every tensor the folded graph
// computes with the original's tensor of the same id (the pass keeps ids).
void expectSameValues(const Graph& original, const Graph& folded) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 0.5f);
  std::map<std::string, ir::TensorValue> feeds;
  for (const ir::Tensor& t : original.tensors()) {
    if (original.producer(t.id) != nullptr) continue;
    ir::TensorValue value = ir::TensorValue::zeros(t.shape, t.dtype);
    for (size_t i = 0; i < value.ints.size(); ++i) value.ints[i] = static_cast<int64_t>(i % 3);
    for (double& v : value.floats) v = dist(rng);
    feeds[t.name] = value;
  }
  // The outputs of removed ops are tensors no op writes: the executor wants a value for each.
  std::map<std::string, ir::TensorValue> folded_feeds = feeds;
  for (const ir::Tensor& t : folded.tensors()) {
    if (folded.producer(t.id) == nullptr) folded_feeds.emplace(t.name, ir::TensorValue::zeros(t.shape, t.dtype));
  }
  const auto want = reference::CpuExecutor(original, {}).run(feeds);
  const auto got = reference::CpuExecutor(folded, {}).run(folded_feeds);
  int compared = 0;
  for (const ir::Op& op : folded.ops()) {
    const size_t id = static_cast<size_t>(op.outputs[0]);
    ASSERT_EQ(got[id].floats.size(), want[id].floats.size()) << op.name;
    for (size_t i = 0; i < got[id].floats.size(); ++i) {
      EXPECT_NEAR(got[id].floats[i], want[id].floats[i], 1e-6f * (1.0f + std::abs(want[id].floats[i])))
          << op.name << "[" << i << "]";
    }
    EXPECT_EQ(got[id].ints, want[id].ints) << op.name;
    ++compared;
  }
  EXPECT_GT(compared, 0);
  for (int output : original.outputs()) {
    bool kept = false;
    for (int now : folded.outputs()) kept = kept || folded.tensor(now).name == original.tensor(output).name;
    EXPECT_TRUE(kept) << original.tensor(output).name;
  }
}

TEST(ConstantFold, MlpComputesTheSameLossGradientsAndUpdates) {
  const Graph graph = exportedMlp();
  expectSameValues(graph, constantFold(graph));
}

// One attention block as exported: per-head Reshape and Transpose, K transposed for the
// scores, a scaled softmax, the heads merged back, an output projection with a residual,
// then a classifier over the flattened sequence (a Reshape chain).
TEST(ConstantFold, TransformerBlockComputesTheSameStep) {
  ImportedModel model;
  model.batch = 2;
  Graph& g = model.graph;
  const int x = g.addInput("x", {2, 4, 8}, DType::kF32, TensorRole::kInput);
  const auto linear = [&](const std::string& name, int in, int64_t out_dim, int64_t in_dim) {
    const int w = g.addWeight(name + ".weight", {out_dim, in_dim}, DType::kF32);
    return g.matmul(name + "/MatMul", in, g.transpose(name + "/Transpose", w, {1, 0}), false, false);
  };
  const auto heads = [&](const std::string& name, int t) {
    return g.transpose(name + "/heads", g.reshape(name + "/split", t, {2, 4, 2, 4}), {0, 2, 1, 3});  // [2,2,4,4]
  };
  const int q = heads("q", linear("q", x, 8, 8));
  const int k = g.transpose("k/T", heads("k", linear("k", x, 8, 8)), {0, 1, 3, 2});
  const int v = heads("v", linear("v", x, 8, 8));
  const int scores = g.scale("scores/scale", g.matmul("scores/MatMul", q, k, false, false), 0.5);
  const int p = g.softmax("softmax", scores, 3, false);
  int ctx = g.transpose("ctx/merge", g.matmul("ctx/MatMul", p, v, false, false), {0, 2, 1, 3});
  ctx = g.reshape("ctx/flat", ctx, {2, 4, 8});
  const int residual = g.add("residual", linear("o", ctx, 8, 8), x);
  const int rows = g.reshape("flat/rows", residual, {8, 8});
  const int flat = g.reshape("flat/batch", rows, {2, 32});
  g.markOutput(linear("head", flat, 3, 32));
  const Graph graph = buildTrainingGraph(model, TrainingOptions{});
  const Graph folded = constantFold(graph);
  // Five weight transposes, K's transpose and their gradients' transposes fold.
  EXPECT_LT(countOps(folded, OpType::kTranspose), countOps(graph, OpType::kTranspose) - 10) << folded.toString();
  expectSameValues(graph, folded);
}

TEST(ConstantFold, BertLosesItsWeightTransposes) {
  OnnxImportOptions options;
  options.batch = 1;
  options.training = true;
  const ImportedModel model = importOnnxFile(TPUSIM_SOURCE_DIR "/traces/bert_base.onnx", options);
  const Graph graph = buildTrainingGraph(model, TrainingOptions{});
  const Graph folded = constantFold(graph);
  const auto weightTransposes = [](const Graph& g) {
    int count = 0;
    for (const ir::Op& op : g.ops()) {
      count += op.type == OpType::kTranspose && g.tensor(op.inputs[0]).role == TensorRole::kWeight;
    }
    return count;
  };
  EXPECT_GT(weightTransposes(graph), 70);  // 6 nn.Linear per layer x 12, the pooler and the head
  EXPECT_EQ(weightTransposes(folded), 0);
  EXPECT_LT(countOps(folded, OpType::kTranspose), countOps(graph, OpType::kTranspose) / 2);
  // Nothing in the imported graph computes on constants alone (the importer evaluated those).
  for (const ir::Op& op : graph.ops()) {
    bool all_constant = true;
    for (int input : op.inputs) all_constant = all_constant && graph.tensor(input).role == TensorRole::kConstant;
    EXPECT_FALSE(all_constant) << op.name;
  }
}

}  // namespace
}  // namespace tpusim
