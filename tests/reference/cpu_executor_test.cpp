#include "reference/cpu/cpu_executor.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "frontend/train/training_graph.hpp"
#include "reference/cpu/broadcast.hpp"
#include "reference/cpu/kernels.hpp"
#include "sim/common/error.hpp"
#include "tests/support/gradient_check.hpp"
#include "tests/support/onnx_builder.hpp"

namespace tpusim::reference {
namespace {

// Drawn as floats, so that the values are exact in f32 and f64 alike.
std::vector<double> randomFloats(size_t count, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<double> values(count);
  for (double& v : values) v = dist(rng);
  return values;
}

using testing::expectGradientsMatch;
using testing::finiteDifferencesFor;

class MatMulKernel : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(MatMulKernel, MatchesDoublePrecisionAndIgnoresThreadCount) {
  const auto [ta, tb] = GetParam();
  const int64_t m = 37, k = 53, n = 29;
  std::mt19937 rng(3);
  const std::vector<double> a = randomFloats(static_cast<size_t>(m * k), rng);
  const std::vector<double> b = randomFloats(static_cast<size_t>(k * n), rng);
  std::vector<double> one(static_cast<size_t>(m * n)), four(static_cast<size_t>(m * n));
  matmul<float>(a, b, one, m, k, n, ta, tb, 1);
  matmul<float>(a, b, four, m, k, n, ta, tb, 4);
  EXPECT_EQ(one, four);  // bit-identical: each element is summed by one thread in the same order
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      double exact = 0;
      for (int64_t i = 0; i < k; ++i) {
        const double av = ta ? a[static_cast<size_t>(i * m + r)] : a[static_cast<size_t>(r * k + i)];
        const double bv = tb ? b[static_cast<size_t>(c * k + i)] : b[static_cast<size_t>(i * n + c)];
        exact += av * bv;
      }
      EXPECT_NEAR(one[static_cast<size_t>(r * n + c)], exact, 1e-4 * (1 + std::abs(exact)));
      EXPECT_EQ(one[static_cast<size_t>(r * n + c)], static_cast<float>(one[static_cast<size_t>(r * n + c)]));
    }
  }
  // In double the sum is the double sum of the same terms in the same order.
  std::vector<double> wide(static_cast<size_t>(m * n));
  matmul<double>(a, b, wide, m, k, n, ta, tb, 3);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      double exact = 0;
      for (int64_t i = 0; i < k; ++i) {
        exact += (ta ? a[static_cast<size_t>(i * m + r)] : a[static_cast<size_t>(r * k + i)]) *
                 (tb ? b[static_cast<size_t>(c * k + i)] : b[static_cast<size_t>(i * n + c)]);
      }
      EXPECT_EQ(wide[static_cast<size_t>(r * n + c)], exact);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTransposes, MatMulKernel, ::testing::Combine(::testing::Bool(), ::testing::Bool()));

// The contract, bit for bit: from zero, in T, k increasing, every product and sum rounded; with
// n past the kernel's tile of 256 columns and m past its block of 4 rows, at any thread count.
template <typename T>
void expectLiteralOrder(bool ta, bool tb) {
  const int64_t m = 11, k = 70, n = 300;
  std::mt19937 rng(9);
  const std::vector<double> a = randomFloats(static_cast<size_t>(m * k), rng);
  const std::vector<double> b = randomFloats(static_cast<size_t>(k * n), rng);
  for (int threads : {1, 3}) {
    std::vector<double> out(static_cast<size_t>(m * n));
    matmul<T>(a, b, out, m, k, n, ta, tb, threads);
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        T sum = 0;
        for (int64_t i = 0; i < k; ++i) {
          const T product = static_cast<T>(ta ? a[static_cast<size_t>(i * m + r)] : a[static_cast<size_t>(r * k + i)]) *
                            static_cast<T>(tb ? b[static_cast<size_t>(c * k + i)] : b[static_cast<size_t>(i * n + c)]);
          sum = sum + product;
        }
        ASSERT_EQ(out[static_cast<size_t>(r * n + c)], static_cast<double>(sum)) << r << ", " << c;
      }
    }
  }
}

// Each batch element is matmul() of its own operands, bit for bit, whether b is shared (the
// batch folded into rows), broadcast over part of the batch, or one per element.
TEST(CpuExecutor, BatchedMatmulIsEachElementsMatmul) {
  struct Case {
    ir::Shape a, b;
    bool ta, tb;
  };
  const int64_t m = 3, k = 5, n = 4;
  const std::vector<Case> cases = {{{7, 1, m, k}, {k, n}, false, false},  // shared b: folded
                                   {{7, m, k}, {n, k}, false, true},      // ... transposed
                                   {{7, k, m}, {k, n}, true, false},      // transposed a: not folded
                                   {{2, 3, m, k}, {3, k, n}, false, false},
                                   {{3, m, k}, {2, 3, k, n}, false, false},  // a broadcast: not folded
                                   {{4, m, k}, {4, k, n}, false, false}};
  std::mt19937 rng(12);
  for (const Case& c : cases) {
    const ir::Shape batch =
        c.a.size() >= c.b.size() ? ir::Shape(c.a.begin(), c.a.end() - 2) : ir::Shape(c.b.begin(), c.b.end() - 2);
    ir::Shape out_shape = batch;
    out_shape.push_back(m);
    out_shape.push_back(n);
    const std::vector<double> a = randomFloats(static_cast<size_t>(ir::elementCount(c.a)), rng);
    const std::vector<double> b = randomFloats(static_cast<size_t>(ir::elementCount(c.b)), rng);
    std::vector<double> out(static_cast<size_t>(ir::elementCount(out_shape)));
    batchedMatmul<float>(a, c.a, b, c.b, out, out_shape, c.ta, c.tb, 2);
    const std::vector<int64_t> sa = broadcastStrides(ir::Shape(c.a.begin(), c.a.end() - 2), batch);
    const std::vector<int64_t> sb = broadcastStrides(ir::Shape(c.b.begin(), c.b.end() - 2), batch);
    for (int64_t e = 0; e < ir::elementCount(batch); ++e) {
      int64_t ia = 0, ib = 0, rest = e;  // element e's operands, from its multi-index
      for (size_t d = batch.size(); d-- > 0;) {
        ia += (rest % batch[d]) * sa[d];
        ib += (rest % batch[d]) * sb[d];
        rest /= batch[d];
      }
      std::vector<double> one(static_cast<size_t>(m * n));
      matmul<float>(std::span<const double>(a).subspan(static_cast<size_t>(ia * m * k), static_cast<size_t>(m * k)),
                    std::span<const double>(b).subspan(static_cast<size_t>(ib * k * n), static_cast<size_t>(k * n)),
                    one, m, k, n, c.ta, c.tb, 1);
      for (int64_t i = 0; i < m * n; ++i) {
        EXPECT_EQ(out[static_cast<size_t>(e * m * n + i)], one[static_cast<size_t>(i)]) << "batch element " << e;
      }
    }
  }
}

TEST_P(MatMulKernel, SumsEachElementInIncreasingKBitForBit) {
  const auto [ta, tb] = GetParam();
  expectLiteralOrder<float>(ta, tb);
  expectLiteralOrder<double>(ta, tb);
}

TEST(Kernels, SoftmaxCrossEntropyClosedForm) {
  // Row 0: logits (0, 0), label 0: -log(1/2) = ln 2.
  // Row 1: logits (ln 3, 0), label 1: -log(1/4) = ln 4.  Mean = 1.5 ln 2.
  const std::vector<double> logits = {0.0, 0.0, std::log(3.0), 0.0};
  const std::vector<int64_t> labels = {0, 1};
  EXPECT_NEAR(softmaxCrossEntropy<float>(logits, labels, 2, 2), 1.5 * std::log(2.0), 1e-6);
  EXPECT_NEAR(softmaxCrossEntropy<double>(logits, labels, 2, 2), 1.5 * std::log(2.0), 1e-15);
  std::vector<double> grad(4);
  softmaxCrossEntropyGrad<float>(logits, labels, grad, 2, 2);
  // (softmax - onehot) / 2 = ((0.5 - 1) / 2, 0.5 / 2, 0.75 / 2, (0.25 - 1) / 2)
  EXPECT_NEAR(grad[0], -0.25f, 1e-6);
  EXPECT_NEAR(grad[1], 0.25f, 1e-6);
  EXPECT_NEAR(grad[2], 0.375f, 1e-6);
  EXPECT_NEAR(grad[3], -0.375f, 1e-6);
  EXPECT_THROW(checkLabels(std::vector<int64_t>{0, 2}, 2), Error);
}

// The MLP of onnx_builder.hpp, trained for one step on random data.
struct MlpStep {
  ImportedModel model;
  ir::Graph graph;
  std::map<std::string, ir::TensorValue> feeds;

  explicit MlpStep(int64_t batch) {
    auto builder = testing::OnnxBuilder::mlp();
    model = importOnnxModel(builder.model(), OnnxImportOptions{batch});
    graph = buildTrainingGraph(model, TrainingOptions{0.1});
    std::mt19937 rng(11);
    for (const ir::Tensor& t : graph.tensors()) {
      if (graph.producer(t.id) != nullptr) continue;
      ir::TensorValue value = ir::TensorValue::zeros(t.shape, t.dtype);
      if (t.role == ir::TensorRole::kLabel) {
        for (size_t i = 0; i < value.ints.size(); ++i) value.ints[i] = static_cast<int64_t>(i % 4);
      } else {
        value.floats = randomFloats(value.floats.size(), rng, 0.5f);
      }
      feeds[t.name] = value;
    }
  }

  int tensorNamed(const std::string& name) const {
    for (const ir::Tensor& t : graph.tensors()) {
      if (t.name == name) return t.id;
    }
    throw std::runtime_error("no tensor " + name);
  }
  double loss(const std::map<std::string, ir::TensorValue>& inputs) const {
    const auto values = CpuExecutor(graph, CpuOptions{}).run(inputs);
    return values[static_cast<size_t>(graph.outputs().back())].floats[0];
  }
};

TEST(CpuExecutor, GradientsMatchFiniteDifferences) {
  const MlpStep step(8);
  const auto values = CpuExecutor(step.graph, CpuOptions{}).run(step.feeds);
  // The SGD update w' = w - 0.1 g recovers each weight's gradient g.
  for (const std::string weight : {"w1", "b1", "w2", "b2"}) {
    const auto& before = step.feeds.at(weight).floats;
    const auto& after = values[static_cast<size_t>(step.tensorNamed(weight + ":updated"))].floats;
    for (size_t i = 0; i < before.size(); i += 3) {
      const double analytic = (before[i] - after[i]) / 0.1;
      auto plus = step.feeds;
      auto minus = step.feeds;
      const float h = 1e-2f;
      plus[weight].floats[i] = static_cast<float>(before[i]) + h;
      minus[weight].floats[i] = static_cast<float>(before[i]) - h;
      const double numeric = (step.loss(plus) - step.loss(minus)) / (plus[weight].floats[i] - minus[weight].floats[i]);
      EXPECT_NEAR(analytic, numeric, 2e-3 + 2e-2 * std::abs(numeric)) << weight << "[" << i << "]";
    }
  }
}

// Random feeds for every tensor no op produces; labels cycle through `classes`.
std::map<std::string, ir::TensorValue> randomFeeds(const ir::Graph& graph, int64_t classes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::map<std::string, ir::TensorValue> feeds;
  for (const ir::Tensor& t : graph.tensors()) {
    if (graph.producer(t.id) != nullptr) continue;
    ir::TensorValue value = ir::TensorValue::zeros(t.shape, t.dtype);
    if (t.role == ir::TensorRole::kLabel) {
      for (size_t i = 0; i < value.ints.size(); ++i) value.ints[i] = static_cast<int64_t>(i) % classes;
    } else {
      value.floats = randomFloats(value.floats.size(), rng, 0.5f);
      if (t.name == "den") {
        for (double& v : value.floats) v = 1.5 + std::abs(v);  // keep the divisor away from 0
      }
    }
    feeds[t.name] = value;
  }
  return feeds;
}

// The gradient tests below build their graph in the dtype of the test's parameter and
// check it with that dtype's finite differences (tests/support/gradient_check.hpp).
class Gradients : public ::testing::TestWithParam<DType> {};

TEST_P(Gradients, BroadcastAndBatchedMatmul) {
  const DType dtype = GetParam();
  // A batched matmul with a shared weight, broadcast add/mul/sub/div, scale and reshape,
  // trained with the added softmax cross-entropy.
  ImportedModel model;
  ir::Graph& g = model.graph;
  const int x = g.addInput("x", {2, 3, 5}, dtype, ir::TensorRole::kInput);
  int h = g.matmul("mm", x, g.addWeight("w", {5, 4}, dtype), false, false);
  h = g.add("add", h, g.addWeight("bias", {1, 4}, dtype));
  h = g.binary(ir::OpType::kMul, "mul", h, g.addWeight("gain", {3, 1}, dtype));
  h = g.binary(ir::OpType::kSub, "sub", h, g.addWeight("shift", {4}, dtype));
  h = g.binary(ir::OpType::kDiv, "div", h, g.addWeight("den", {4}, dtype));
  g.markOutput(g.reshape("flat", g.scale("scale", h, 0.5), {6, 4}));
  model.batch = 6;
  const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{0.1});
  EXPECT_EQ(expectGradientsMatch(graph, randomFeeds(graph, 4, 13), 0.1, finiteDifferencesFor(dtype)), 5);
}

TEST_P(Gradients, UnaryAndTranspose) {
  const DType dtype = GetParam();
  ImportedModel model;
  ir::Graph& g = model.graph;
  const int x = g.addInput("x", {4, 6}, dtype, ir::TensorRole::kInput);
  int h = g.matmul("mm", x, g.addWeight("w", {6, 5}, dtype), false, false);  // [4, 5]
  h = g.transpose("t", h, {1, 0});                                           // [5, 4]
  h = g.unary(ir::UnaryKind::kTanh, "tanh", h);
  const int s = g.unary(ir::UnaryKind::kSigmoid, "sigmoid", h);  // in (0, 1): safe for log, sqrt, 1/x
  int y = g.add("sum1", g.unary(ir::UnaryKind::kLog, "log", s), g.unary(ir::UnaryKind::kSqrt, "sqrt", s));
  y = g.add("sum2", y, g.unary(ir::UnaryKind::kReciprocal, "recip", g.add("one_plus", s, s)));
  y = g.add("sum3", y, g.unary(ir::UnaryKind::kErf, "erf", g.unary(ir::UnaryKind::kNeg, "neg", h)));
  y = g.add("sum4", y, g.unary(ir::UnaryKind::kExp, "exp", h));
  // abs away from its kink at 0, on both sides: s > 0 and -s < 0.
  y = g.add("sum5", y, g.unary(ir::UnaryKind::kAbs, "abs_pos", s));
  y = g.add("sum6", y, g.unary(ir::UnaryKind::kAbs, "abs_neg", g.unary(ir::UnaryKind::kNeg, "neg_s", s)));
  g.markOutput(g.transpose("back", y, {}));  // default perm reverses: [4, 5]
  model.batch = 4;
  const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{0.1});
  EXPECT_EQ(expectGradientsMatch(graph, randomFeeds(graph, 5, 17), 0.1, finiteDifferencesFor(dtype)), 1);
}

// The trigonometric and hyperbolic kinds, each inside its domain: 0.9 tanh(.) in (-1, 1) for
// asin, acos and atanh; 1.5 + sigmoid(.) above 1 for acosh.
TEST_P(Gradients, TrigonometricAndHyperbolic) {
  const DType dtype = GetParam();
  ImportedModel model;
  ir::Graph& g = model.graph;
  const int x = g.addInput("x", {4, 6}, dtype, ir::TensorRole::kInput);
  const int h = g.matmul("mm", x, g.addWeight("w", {6, 5}, dtype), false, false);  // [4, 5]
  const int inside = g.scale("inside", g.unary(ir::UnaryKind::kTanh, "tanh", h), 0.9);
  const int above =
      g.add("above", g.unary(ir::UnaryKind::kSigmoid, "sigmoid", h), g.addConstant("one_and_half", {}, dtype));
  int y = g.unary(ir::UnaryKind::kSin, "sin", h);
  int n = 0;
  const auto plus = [&](ir::UnaryKind kind, int v) {
    y = g.add("sum" + std::to_string(n++), y, g.unary(kind, std::string(ir::unaryKindName(kind)), v));
  };
  for (ir::UnaryKind kind : {ir::UnaryKind::kCos, ir::UnaryKind::kTan, ir::UnaryKind::kAtan, ir::UnaryKind::kSinh,
                             ir::UnaryKind::kCosh, ir::UnaryKind::kAsinh}) {
    plus(kind, inside);
  }
  for (ir::UnaryKind kind : {ir::UnaryKind::kAsin, ir::UnaryKind::kAcos, ir::UnaryKind::kAtanh}) plus(kind, inside);
  plus(ir::UnaryKind::kAcosh, above);
  g.markOutput(y);
  model.batch = 4;
  const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{0.1});
  std::map<std::string, ir::TensorValue> feeds = randomFeeds(graph, 5, 23);
  feeds["one_and_half"] = ir::TensorValue{{}, dtype, {1.5}, {}};
  EXPECT_EQ(expectGradientsMatch(graph, feeds, 0.1, finiteDifferencesFor(dtype)), 1);
}

// Unit-step slices of one weight, as an unrolled loop reads its steps: a contiguous run (rows
// 0-1, 2-3, 4), a separate one (row 6) and an overlapping one (rows 1-3), whose gradients the
// backward joins per run (a Concat placed by a SliceGrad) and adds.
TEST_P(Gradients, SlicesOfOneTensorJoinPerRun) {
  const DType dtype = GetParam();
  ImportedModel model;
  ir::Graph& g = model.graph;
  const int x = g.addInput("x", {3, 4}, dtype, ir::TensorRole::kInput);
  const int w = g.addWeight("w", {7, 4}, dtype);
  int y = -1;
  int n = 0;
  for (const auto& [start, length] : std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {2, 2}, {4, 1}, {6, 1}, {1, 3}}) {
    const int rows = g.slice("rows" + std::to_string(n), w, 0, start, length, ir::TensorRole::kActivation);
    const int scores = g.matmul("scores" + std::to_string(n++), x, rows, false, true);  // [3, length]
    const int summed =
        g.reduce("summed" + std::to_string(n), g.unary(ir::UnaryKind::kTanh, "tanh" + std::to_string(n), scores),
                 ir::Reduction::kSum, {1}, true);
    y = y < 0 ? summed : g.add("sum" + std::to_string(n), y, summed);
  }
  g.markOutput(g.binary(ir::OpType::kMul, "wide", y, g.addWeight("scale", {1, 2}, dtype)));  // [3, 2]
  model.batch = 3;
  const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{0.1});
  EXPECT_EQ(expectGradientsMatch(graph, randomFeeds(graph, 2, 29), 0.1, finiteDifferencesFor(dtype)), 2);
}

TEST_P(Gradients, ReduceAndConcat) {
  const DType dtype = GetParam();
  ImportedModel model;
  ir::Graph& g = model.graph;
  const int x = g.addInput("x", {4, 3, 5}, dtype, ir::TensorRole::kInput);
  const int w = g.addWeight("w", {4, 3, 5}, dtype);
  const int v = g.addWeight("v", {4, 2}, dtype);
  const int prod = g.binary(ir::OpType::kMul, "mul", x, w);
  const int mean = g.reduce("mean", prod, ir::Reduction::kMean, {1}, false);          // [4, 5]
  const int sum = g.reduce("sum", prod, ir::Reduction::kSum, {1, 2}, true);           // [4, 1, 1]
  const int joined = g.concat("cat", {mean, g.reshape("flat", sum, {4, 1}), v}, -1);  // [4, 8]
  g.markOutput(joined);
  model.batch = 4;
  const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{0.1});
  EXPECT_EQ(expectGradientsMatch(graph, randomFeeds(graph, 8, 19), 0.1, finiteDifferencesFor(dtype)), 2);
}

TEST_P(Gradients, EmbeddingGather) {
  const DType dtype = GetParam();
  ImportedModel model;
  ir::Graph& g = model.graph;
  const int table = g.addWeight("table", {10, 6}, dtype);
  const int ids = g.addConstant("ids", {5}, DType::kInt64);
  const int rows = g.gather("embed", table, ids, 0);  // [5, 6]
  g.markOutput(g.matmul("mm", rows, g.addWeight("w", {6, 3}, dtype), false, false));
  model.batch = 5;
  const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{0.1});
  auto feeds = randomFeeds(graph, 3, 23);
  feeds["ids"].ints = {3, 7, 3, -1, 0};  // a repeated id accumulates; -1 wraps to row 9
  EXPECT_EQ(expectGradientsMatch(graph, feeds, 0.1, finiteDifferencesFor(dtype)), 2);
  feeds["ids"].ints[1] = 10;
  EXPECT_THROW(CpuExecutor(graph, CpuOptions{}).run(feeds), Error);
}

TEST_P(Gradients, LayerNormalizationThroughItsDecomposition) {
  const DType dtype = GetParam();
  testing::OnnxBuilder b;
  const int32_t type = dtype == DType::kF64 ? onnx::TensorProto::DOUBLE : onnx::TensorProto::FLOAT;
  b.input("x", {-1, 6}, type).weight("gamma", {6}, type).weight("beta", {6}, type);
  b.weight("w", {3, 6}, type).weight("bias", {3}, type);
  auto& norm = b.node("LayerNormalization", {"x", "gamma", "beta"}, "normed");
  auto* eps = norm.add_attribute();
  eps->set_name("epsilon");
  eps->set_type(onnx::AttributeProto::FLOAT);
  eps->set_f(1e-3f);
  b.gemm("normed", "w", "bias", "logits");
  b.output("logits");
  ImportedModel model = importOnnxModel(b.model(), OnnxImportOptions{4});
  const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{0.1});
  auto feeds = randomFeeds(graph, 3, 29);
  for (const auto& [name, value] : model.initializers) {
    if (name.find("epsilon") != std::string::npos) feeds[name] = value;  // the constant keeps its value
  }
  EXPECT_EQ(expectGradientsMatch(graph, feeds, 0.1, finiteDifferencesFor(dtype)), 4);
}

TEST_P(Gradients, BatchNormWithBatchStatisticsAndFrozenRunningOnes) {
  const DType dtype = GetParam();
  testing::OnnxBuilder b;
  const int32_t type = dtype == DType::kF64 ? onnx::TensorProto::DOUBLE : onnx::TensorProto::FLOAT;
  b.input("x", {-1, 3, 2, 2}, type).weight("scale", {3}, type).weight("shift", {3}, type);
  b.weight("mean", {3}, type).weight("var", {3}, type);
  b.node("BatchNormalization", {"x", "scale", "shift", "mean", "var"}, "normed");
  b.node("Flatten", {"normed"}, "logits");
  b.output("logits");
  OnnxImportOptions options;
  options.batch = 4;
  options.training = true;
  ImportedModel model = importOnnxModel(b.model(), options);
  const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{0.1});
  auto feeds = randomFeeds(graph, 12, 31);
  for (const auto& [name, value] : model.initializers) {
    if (name.find("epsilon") != std::string::npos) feeds[name] = value;
  }
  // Only scale and shift are trained; the running mean and variance are constants.
  EXPECT_EQ(expectGradientsMatch(graph, feeds, 0.1, finiteDifferencesFor(dtype)), 2);
}

TEST_P(Gradients, WhereRoutesToTheChosenBranch) {
  const DType dtype = GetParam();
  ImportedModel model;
  ir::Graph& g = model.graph;
  const int mask = g.addConstant("mask", {4, 1}, DType::kBool);
  const int a = g.addWeight("a", {4, 3}, dtype);
  const int b = g.addWeight("b", {3}, dtype);
  g.markOutput(g.where("select", mask, a, b));  // broadcast: [4, 1] ? [4, 3] : [3]
  model.batch = 4;
  const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{0.1});
  auto feeds = randomFeeds(graph, 3, 37);
  feeds["mask"].ints = {1, 0, 1, 0};
  EXPECT_EQ(expectGradientsMatch(graph, feeds, 0.1, finiteDifferencesFor(dtype)), 2);
}

TEST_P(Gradients, PoolAndConv) {
  const DType dtype = GetParam();
  ImportedModel model;
  ir::Graph& g = model.graph;
  const int x = g.addInput("x", {2, 2, 6, 5}, dtype, ir::TensorRole::kInput);
  ir::ConvGeometry conv;
  conv.pads = {1, 0, 1, 1};
  conv.strides = {1, 2};
  const int c = g.conv("conv", x, g.addWeight("w", {4, 2, 3, 2}, dtype), conv);  // [2, 4, 6, 3]
  ir::PoolGeometry max_pool;
  max_pool.kernel = {2, 2};
  max_pool.strides = {2, 1};
  max_pool.pads = {0, 1, 0, 0};
  ir::PoolGeometry avg_pool = max_pool;
  avg_pool.max = false;
  avg_pool.count_include_pad = true;
  const int pooled = g.add("sum", g.pool("max", c, max_pool), g.pool("avg", c, avg_pool));  // [2, 4, 3, 3]
  g.markOutput(g.reshape("flat", pooled, {2, 36}));
  model.batch = 2;
  const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{0.1});
  // A small step in f32: a larger one lets a perturbed weight swap which element of a window is the max.
  testing::FiniteDifferences fd = finiteDifferencesFor(dtype);
  fd.step = std::min(fd.step, 1e-3);
  EXPECT_EQ(expectGradientsMatch(graph, randomFeeds(graph, 36, 41), 0.1, fd), 1);
}

TEST_P(Gradients, StridedAndNegativeStepSlice) {
  const DType dtype = GetParam();
  ImportedModel model;
  ir::Graph& g = model.graph;
  const int w = g.addWeight("w", {5, 6}, dtype);
  // Rows 4, 2, 0 (step -2) and columns 1..3, then two halves of the columns of w.
  const int picked = g.stridedSlice("pick", w, {4, 1}, {-2, 1}, {3, 3});
  const int left = g.slice("left", w, 1, 0, 3, ir::TensorRole::kActivation);
  const int right = g.slice("right", w, 1, 3, 3, ir::TensorRole::kActivation);
  const int rows = g.add("sum", g.slice("top", left, 0, 0, 3, ir::TensorRole::kActivation),
                         g.slice("bottom", right, 0, 2, 3, ir::TensorRole::kActivation));
  g.markOutput(g.binary(ir::OpType::kMul, "mix", picked, rows));
  model.batch = 3;
  const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{0.1});
  EXPECT_EQ(expectGradientsMatch(graph, randomFeeds(graph, 3, 43), 0.1, finiteDifferencesFor(dtype)), 1);
}

TEST_P(Gradients, PowOfBaseAndExponent) {
  const DType dtype = GetParam();
  ImportedModel model;
  ir::Graph& g = model.graph;
  const int base = g.addWeight("base", {3, 4}, dtype);
  const int exponent = g.addWeight("exponent", {4}, dtype);  // broadcast over rows
  // a^b needs a > 0 for the exponent's gradient (ln a): twice a sigmoid is in (0, 2).
  const int positive =
      g.add("positive", g.unary(ir::UnaryKind::kSigmoid, "sig", base), g.unary(ir::UnaryKind::kSigmoid, "sig2", base));
  g.markOutput(g.pow("pow", positive, exponent));
  model.batch = 3;
  const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{0.1});
  EXPECT_EQ(expectGradientsMatch(graph, randomFeeds(graph, 4, 47), 0.1, finiteDifferencesFor(dtype)), 2);
}

TEST_P(Gradients, SoftmaxCastAndBatchedLhs) {
  const DType dtype = GetParam();
  ImportedModel model;
  ir::Graph& g = model.graph;
  // x [2, 3, 4] x w [4, 5]: an unbatched rhs, whose gradient folds the batch into rows.
  const int x = g.addInput("x", {2, 3, 4}, dtype, ir::TensorRole::kInput);
  int h = g.matmul("mm", x, g.addWeight("w", {4, 5}, dtype), false, false);  // [2, 3, 5]
  h = g.cast("cast", h, dtype);
  const int p = g.softmax("softmax", h, 1, false);  // along the middle axis
  const int lp = g.softmax("log_softmax", h, -1, true);
  const int y = g.add("sum", g.binary(ir::OpType::kMul, "weigh", p, h), lp);
  g.markOutput(g.reshape("rows", g.reduce("pool", y, ir::Reduction::kSum, {1}, false), {2, 5}));
  model.batch = 2;
  const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{0.1});
  EXPECT_EQ(expectGradientsMatch(graph, randomFeeds(graph, 5, 23), 0.1, finiteDifferencesFor(dtype)), 1);
}

TEST_P(Gradients, ReluBroadcastToAndScale) {
  const DType dtype = GetParam();
  ImportedModel model;
  ir::Graph& g = model.graph;
  const int x = g.addInput("x", {3, 4}, dtype, ir::TensorRole::kInput);
  const int w = g.addWeight("w", {1, 4}, dtype);
  const int spread = g.broadcastTo("expand", w, {3, 4}, ir::TensorRole::kActivation);  // [1, 4] -> [3, 4]
  const int h = g.relu("relu", g.binary(ir::OpType::kMul, "mul", x, spread));
  g.markOutput(g.scale("scale", g.add("add", h, g.addWeight("b", {3, 4}, dtype)), 2.0));
  model.batch = 3;
  const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{0.1});
  EXPECT_EQ(expectGradientsMatch(graph, randomFeeds(graph, 4, 53), 0.1, finiteDifferencesFor(dtype)), 2);
}

INSTANTIATE_TEST_SUITE_P(InF64AndF32, Gradients, testing::gradientDTypes(), testing::dtypeParamName);

TEST(CpuExecutor, CastRoundsTruncatesAndWraps) {
  ir::Graph g;
  const int x = g.addInput("x", {5}, DType::kF32, ir::TensorRole::kInput);
  const int to_f16 = g.cast("f16", x, DType::kF16);
  const int to_bf16 = g.cast("bf16", x, DType::kBF16);
  const int to_int = g.cast("int8", x, DType::kInt8);
  const int to_bool = g.cast("bool", x, DType::kBool);
  const int back = g.cast("back", to_int, DType::kF32);
  const auto values =
      CpuExecutor(g, CpuOptions{})
          .run({{"x",
                 ir::TensorValue{{5}, DType::kF32, {1.0f + 1.0f / 4096.0f, -2.75f, 300.5f, 0.0f, 1.00390625f}, {}}}});
  // f16 has 10 fraction bits: 1 + 2^-12 rounds to 1; bf16 has 7: 1 + 2^-8 is a tie, to even (1).
  EXPECT_EQ(values[static_cast<size_t>(to_f16)].floats, (std::vector<double>{1.0, -2.75, 300.5, 0.0, 1.00390625}));
  EXPECT_EQ(values[static_cast<size_t>(to_bf16)].floats, (std::vector<double>{1.0, -2.75, 300.0, 0.0, 1.0}));
  // To integers: truncated toward zero, then wrapped to 8 bits (300 -> 44).
  EXPECT_EQ(values[static_cast<size_t>(to_int)].ints, (std::vector<int64_t>{1, -2, 44, 0, 1}));
  EXPECT_EQ(values[static_cast<size_t>(to_bool)].ints, (std::vector<int64_t>{1, 1, 1, 0, 1}));
  EXPECT_EQ(values[static_cast<size_t>(back)].floats, (std::vector<double>{1.0, -2.0, 44.0, 0.0, 1.0}));
}

// An integer Pow is exact (not a double pow: 3^39 is not a double), wraps as int64 products do,
// and a negative exponent truncates the real result, 0's infinity clamped as a Cast clamps it.
TEST(CpuExecutor, IntegerPowIsExactAndWrapsAndNegativeExponentsTruncate) {
  ir::Graph g;
  const int a = g.addInput("a", {7}, DType::kInt64, ir::TensorRole::kInput);
  const int b = g.addInput("b", {7}, DType::kInt64, ir::TensorRole::kInput);
  const int wide = g.pow("pow", a, b);
  const int narrow = g.pow("pow32", g.cast("a32", a, DType::kInt32), g.cast("b32", b, DType::kInt32));
  g.markOutput(wide);
  g.markOutput(narrow);
  const auto values = CpuExecutor(g, CpuOptions{})
                          .run({{"a", ir::TensorValue{{7}, DType::kInt64, {}, {0, -2, 3, 0, 3, 2, -1}}},
                                {"b", ir::TensorValue{{7}, DType::kInt64, {}, {-1, -1, 3, 0, 39, 63, -3}}}});
  EXPECT_EQ(values[static_cast<size_t>(wide)].ints,
            (std::vector<int64_t>{INT64_MAX, 0, 27, 1, 4052555153018976267, INT64_MIN, -1}));
  // In 32 bits: INT64_MAX's low bits are -1; 3^39 and 2^63 wrap.
  EXPECT_EQ(values[static_cast<size_t>(narrow)].ints, (std::vector<int64_t>{-1, 0, 27, 1, -1201670133, 0, -1}));
}

TEST(CpuExecutor, F64IsNotRoundedAndCastsToNarrowerTypesRoundOnce) {
  ir::Graph g;
  const int x = g.addInput("x", {4}, DType::kF64, ir::TensorRole::kInput);
  const int third =
      g.binary(ir::OpType::kDiv, "third", x, g.addInput("three", {1}, DType::kF64, ir::TensorRole::kInput));
  const int to_f32 = g.cast("f32", x, DType::kF32);
  const int to_bf16 = g.cast("bf16", x, DType::kBF16);
  const int to_int = g.cast("int64", x, DType::kInt64);
  const int wide = g.cast("f64", g.cast("i", to_int, DType::kInt64), DType::kF64);
  // 1 + 2^-30 is no float; 1 + 2^-8 + 2^-40 is just above a bf16 tie, which a rounding through
  // float (to 1 + 2^-8, a tie, then to even: 1) would miss; 2^53 + 1 is an integer f64 holds.
  const double above_tie = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  const double big = std::ldexp(1.0, 52) + 1.0;
  const auto values =
      CpuExecutor(g, CpuOptions{})
          .run({{"x", ir::TensorValue{{4}, DType::kF64, {1.0 + std::ldexp(1.0, -30), above_tie, big, -2.5}, {}}},
                {"three", ir::TensorValue{{1}, DType::kF64, {3.0}, {}}}});
  EXPECT_EQ(values[static_cast<size_t>(third)].floats[0], (1.0 + std::ldexp(1.0, -30)) / 3.0);  // in double
  EXPECT_EQ(values[static_cast<size_t>(to_f32)].floats,
            (std::vector<double>{1.0, static_cast<float>(above_tie), static_cast<float>(big), -2.5}));
  EXPECT_EQ(values[static_cast<size_t>(to_bf16)].floats[1], 1.0 + std::ldexp(1.0, -7));  // rounded up, once
  EXPECT_EQ(values[static_cast<size_t>(to_int)].ints[2], static_cast<int64_t>(big));
  EXPECT_EQ(values[static_cast<size_t>(wide)].floats[2], big);
  EXPECT_EQ(values[static_cast<size_t>(wide)].floats[3], -2.0);  // truncated toward zero
}

TEST(CpuExecutor, GeluMatchesItsClosedForms) {
  for (const std::string mode : {"none", "tanh"}) {
    testing::OnnxBuilder b(20);
    b.input("x", {4});
    auto& node = b.node("Gelu", {"x"}, "y");
    auto* attr = node.add_attribute();
    attr->set_name("approximate");
    attr->set_type(onnx::AttributeProto::STRING);
    attr->set_s(mode);
    b.output("y");
    const ImportedModel model = importOnnxModel(b.model(), {});
    auto feeds = model.initializers;
    const std::vector<double> x = {-2.0, -0.5, 0.0, 1.5};
    feeds["x"] = ir::TensorValue{{4}, DType::kF32, x, {}};
    const auto values = CpuExecutor(model.graph, CpuOptions{}).run(feeds);
    const auto& y = values[static_cast<size_t>(model.graph.outputs()[0])].floats;
    for (size_t i = 0; i < x.size(); ++i) {
      const double v = x[i];
      const double expected = mode == "none"
                                  ? 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)))
                                  : 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
      EXPECT_NEAR(y[i], expected, 1e-6) << mode << " at " << v;
    }
  }
}

TEST(CpuExecutor, SgdUpdateIsExact) {
  const MlpStep step(8);
  const auto values = CpuExecutor(step.graph, CpuOptions{}).run(step.feeds);
  for (const ir::Op& op : step.graph.ops()) {
    if (op.type != ir::OpType::kSgdUpdate) continue;
    const auto& w = values[static_cast<size_t>(op.inputs[0])].floats;
    const auto& g = values[static_cast<size_t>(op.inputs[1])].floats;
    const auto& updated = values[static_cast<size_t>(op.outputs[0])].floats;
    for (size_t i = 0; i < w.size(); ++i) {
      EXPECT_EQ(updated[i], static_cast<float>(w[i]) - 0.1f * static_cast<float>(g[i]));  // in float, for f32
    }
  }
}

TEST(CpuExecutor, KeepsTheTensorsItIsAskedForBitForBitAndReleasesTheRest) {
  const MlpStep step(16);
  std::vector<int> keep = step.graph.outputs();
  for (const ir::Op& op : step.graph.ops()) {
    if (op.type == ir::OpType::kSgdUpdate) keep.push_back(op.outputs[0]);
  }
  const CpuExecutor holding(step.graph, CpuOptions{});
  const CpuExecutor releasing(step.graph, CpuOptions{}, keep);
  const auto every = holding.run(step.feeds);
  const auto kept = releasing.run(step.feeds);
  const TimedRun timed = releasing.runTimed(step.feeds, {1, 2});
  ASSERT_EQ(kept.size(), every.size());
  uint64_t bytes = 0;
  for (const ir::Tensor& t : step.graph.tensors()) {
    bytes += t.bytes();
    const auto id = static_cast<size_t>(t.id);
    if (std::find(keep.begin(), keep.end(), t.id) != keep.end()) {
      EXPECT_FALSE(every[id].floats.empty() && every[id].ints.empty()) << t.name;
      EXPECT_EQ(kept[id].floats, every[id].floats) << t.name;
      EXPECT_EQ(kept[id].ints, every[id].ints) << t.name;
      EXPECT_EQ(timed.values[id].floats, every[id].floats) << t.name;
    } else {
      EXPECT_TRUE(kept[id].floats.empty() && kept[id].ints.empty()) << t.name << " was not released";
      EXPECT_TRUE(timed.values[id].floats.empty() && timed.values[id].ints.empty()) << t.name;
    }
  }
  EXPECT_EQ(holding.heldPeakBytes(), bytes);
  EXPECT_LT(releasing.heldPeakBytes(), bytes);
  EXPECT_EQ(releasing.heldPeakBytes(), tensorLifetimes(step.graph, keep).peak_bytes);
}

TEST(CpuExecutor, ResultsDoNotDependOnThreads) {
  const MlpStep step(64);
  const auto one = CpuExecutor(step.graph, CpuOptions{1, std::nullopt}).run(step.feeds);
  const auto many = CpuExecutor(step.graph, CpuOptions{3, std::nullopt}).run(step.feeds);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_EQ(one[i].floats, many[i].floats) << i;
}

TEST(CpuExecutor, ConvolutionsAndTheirGradientsDoNotDependOnThreads) {
  // Each pass splits whole output elements over the threads (reference/cpu/conv.hpp), here
  // over images, output and input channels of a grouped, strided, dilated convolution.
  ir::ConvGeometry geometry;
  geometry.strides = {2, 1};
  geometry.pads = {1, 0, 1, 2};
  geometry.dilations = {1, 2};
  geometry.group = 2;
  const ir::Shape x_shape{3, 6, 9, 8}, w_shape{8, 3, 3, 2};
  ir::Graph g;
  const int x = g.addInput("x", x_shape, DType::kF32, ir::TensorRole::kInput);
  const int w = g.addInput("w", w_shape, DType::kF32, ir::TensorRole::kInput);
  const int y = g.conv("y", x, w, geometry);
  const int dy = g.addInput("dy", g.tensor(y).shape, DType::kF32, ir::TensorRole::kInput);
  for (int out : {y, g.convGradInput("dx", dy, w, x_shape, geometry), g.convGradWeight("dw", x, dy, w_shape, geometry)})
    g.markOutput(out);
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::map<std::string, ir::TensorValue> feeds;
  for (const char* name : {"x", "w", "dy"}) {
    const ir::Tensor& t = g.tensor(name == std::string("x") ? x : name == std::string("w") ? w : dy);
    ir::TensorValue value = ir::TensorValue::zeros(t.shape, DType::kF32);
    for (double& v : value.floats) v = static_cast<float>(uniform(rng));
    feeds[name] = value;
  }
  const auto one = CpuExecutor(g, CpuOptions{1, std::nullopt}).run(feeds);
  for (int threads : {2, 3, 7, 64}) {
    const auto many = CpuExecutor(g, CpuOptions{threads, std::nullopt}).run(feeds);
    for (int out : g.outputs()) {
      EXPECT_EQ(one[static_cast<size_t>(out)].floats, many[static_cast<size_t>(out)].floats)
          << g.tensor(out).name << " with " << threads << " threads";
    }
  }
}

TEST(CpuExecutor, BadFeedsAreErrors) {
  const MlpStep step(8);
  auto missing = step.feeds;
  missing.erase("w1");
  EXPECT_THROW(CpuExecutor(step.graph, CpuOptions{}).run(missing), Error);
  auto wrong_shape = step.feeds;
  wrong_shape["x"] = ir::TensorValue::zeros({8, 15}, DType::kF32);
  EXPECT_THROW(CpuExecutor(step.graph, CpuOptions{}).run(wrong_shape), Error);
  auto bad_label = step.feeds;
  bad_label["labels"].ints[0] = 4;  // 4 classes: ids 0..3
  try {
    CpuExecutor(step.graph, CpuOptions{}).run(bad_label);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("label 4 of row 0"), std::string::npos) << error.what();
  }
}

TEST(CpuExecutor, ThreadCountsOutsideOneTo1024AreConfigErrors) {
  const MlpStep step(8);
  for (int threads : {0, -2, kMaxCpuThreads + 1}) {
    try {
      CpuExecutor(step.graph, CpuOptions{threads, std::nullopt});
      FAIL() << "expected an error for " << threads << " threads";
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::kInvalidConfig);
      EXPECT_EQ(std::string(error.what()), "threads must be 1 to 1024, got " + std::to_string(threads));
    }
  }
  EXPECT_NO_THROW(CpuExecutor(step.graph, CpuOptions{kMaxCpuThreads, std::nullopt}));
}

TEST(CpuExecutor, ShippedMlpInitializersAreRead) {
  const ImportedModel model = importOnnxFile(TPUSIM_SOURCE_DIR "/traces/mlp.onnx", OnnxImportOptions{2});
  ASSERT_EQ(model.initializers.size(), 6u);
  EXPECT_EQ(model.initializers.at("0.weight").shape, (ir::Shape{512, 784}));
  EXPECT_EQ(model.initializers.at("0.weight").floats.size(), 512u * 784);
  // PyTorch initialises Linear weights uniformly in +-1/sqrt(fan_in).
  for (float w : model.initializers.at("0.weight").floats) EXPECT_LE(std::abs(w), 1.0f / std::sqrt(784.0f));
}

}  // namespace
}  // namespace tpusim::reference
