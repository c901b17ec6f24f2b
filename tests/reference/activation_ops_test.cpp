// The ONNX activations LeakyRelu, PRelu, Elu and Selu and the runtime comparisons, imported
// and run on the CPU executor: values against their closed forms (ONNX's definitions), and
// the gradients training takes through them against central finite differences.
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "frontend/train/training_graph.hpp"
#include "reference/cpu/cpu_executor.hpp"
#include "tests/support/gradient_check.hpp"
#include "tests/support/onnx_builder.hpp"

namespace tpusim::reference {
namespace {

using ir::TensorRole;
using testing::expectGradientsMatch;
using testing::Feeds;
using testing::finiteDifferencesFor;

constexpr double kSeluAlpha = 1.67326319217681884765625;
constexpr double kSeluGamma = 1.05070102214813232421875;

// Points on both sides of every kink, and the kink itself.
const std::vector<double> kPoints = {-3.0, -1.0, -0.5, 0.0, 0.25, 2.0};

double leakyRelu(double x, double alpha) {
  return x >= 0 ? x : alpha * x;
}
double elu(double x, double alpha) {
  return x >= 0 ? x : alpha * (std::exp(x) - 1);
}
double selu(double x, double alpha, double gamma) {
  return x > 0 ? gamma * x : gamma * (alpha * std::exp(x) - alpha);
}

// Imports `builder`'s model and runs it on `x`; the values of the graph's outputs.
std::vector<ir::TensorValue> runOnnx(testing::OnnxBuilder& builder, const ir::TensorValue& x, Feeds feeds = {}) {
  const ImportedModel model = importOnnxModel(builder.model(), {});
  feeds["x"] = x;
  for (const auto& [name, value] : model.initializers) feeds.emplace(name, value);
  const auto values = CpuExecutor(model.graph, CpuOptions{}).run(feeds);
  std::vector<ir::TensorValue> outputs;
  for (int id : model.graph.outputs()) outputs.push_back(values[static_cast<size_t>(id)]);
  return outputs;
}

ir::TensorValue floats(ir::Shape shape, std::vector<double> values, DType dtype = DType::kF32) {
  return ir::TensorValue{std::move(shape), dtype, std::move(values), {}};
}

void expectValues(const ir::TensorValue& actual, const std::vector<double>& expected, const std::string& what) {
  ASSERT_EQ(actual.floats.size(), expected.size()) << what;
  for (size_t i = 0; i < expected.size(); ++i) {
    // f32 arithmetic against a double closed form: a few ulps.
    EXPECT_NEAR(actual.floats[i], expected[i], 1e-6 * std::max(1.0, std::abs(expected[i])))
        << what << " at x = " << kPoints[i % kPoints.size()];
  }
}

TEST(ActivationValues, LeakyReluEluAndSeluMatchOnnxsDefinitions) {
  testing::OnnxBuilder b;
  b.input("x", {static_cast<int64_t>(kPoints.size())});
  b.node("LeakyRelu", {"x"}, "leaky");
  testing::setFloatAttribute(b.node("LeakyRelu", {"x"}, "leaky_0.2"), "alpha", 0.2f);
  b.node("Elu", {"x"}, "elu");
  testing::setFloatAttribute(b.node("Elu", {"x"}, "elu_0.5"), "alpha", 0.5f);
  b.node("Selu", {"x"}, "selu");
  auto& selu_node = b.node("Selu", {"x"}, "selu_2_3");
  testing::setFloatAttribute(selu_node, "alpha", 2.0f);
  testing::setFloatAttribute(selu_node, "gamma", 3.0f);
  for (const char* out : {"leaky", "leaky_0.2", "elu", "elu_0.5", "selu", "selu_2_3"}) b.output(out);
  const auto out = runOnnx(b, floats({static_cast<int64_t>(kPoints.size())}, kPoints));
  std::vector<double> expected[6];
  for (double x : kPoints) {
    expected[0].push_back(leakyRelu(x, static_cast<double>(0.01f)));
    expected[1].push_back(leakyRelu(x, static_cast<double>(0.2f)));
    expected[2].push_back(elu(x, 1.0));
    expected[3].push_back(elu(x, 0.5));
    expected[4].push_back(selu(x, kSeluAlpha, kSeluGamma));
    expected[5].push_back(selu(x, 2.0, 3.0));
  }
  const char* names[] = {"LeakyRelu", "LeakyRelu(0.2)", "Elu", "Elu(0.5)", "Selu", "Selu(2, 3)"};
  for (size_t k = 0; k < 6; ++k) expectValues(out[k], expected[k], names[k]);
  // Spot values: elu(-1) = alpha (e^-1 - 1); selu(-1) = gamma alpha (e^-1 - 1); 0 maps to 0.
  EXPECT_NEAR(out[3].floats[1], 0.5 * (std::exp(-1.0) - 1), 1e-7);
  EXPECT_NEAR(out[4].floats[1], kSeluGamma * kSeluAlpha * (std::exp(-1.0) - 1), 1e-6);
  EXPECT_NEAR(out[1].floats[0], -0.6, 1e-7);
  for (size_t k = 0; k < 6; ++k) EXPECT_EQ(out[k].floats[3], 0.0) << names[k];
  EXPECT_NEAR(out[5].floats[5], 6.0, 1e-6);
}

TEST(ActivationValues, NanStaysNanAndInfinitiesSaturate) {
  testing::OnnxBuilder b;
  b.input("x", {3}).weight("slope", {1});
  b.node("LeakyRelu", {"x"}, "leaky");
  b.node("Elu", {"x"}, "elu");
  b.node("Selu", {"x"}, "selu");
  b.node("PRelu", {"x", "slope"}, "prelu");
  for (const char* out : {"leaky", "elu", "selu", "prelu"}) b.output(out);
  const double inf = std::numeric_limits<double>::infinity();
  const auto out = runOnnx(b, floats({3}, {std::nan(""), inf, -inf}), {{"slope", floats({1}, {0.25})}});
  for (const auto& y : out) EXPECT_TRUE(std::isnan(y.floats[0]));
  for (const auto& y : out) EXPECT_EQ(y.floats[1], inf);
  EXPECT_EQ(out[0].floats[2], -inf);
  EXPECT_EQ(out[1].floats[2], -1.0);
  EXPECT_NEAR(out[2].floats[2], -kSeluGamma * kSeluAlpha, 1e-6);
  EXPECT_EQ(out[3].floats[2], -inf);
}

TEST(ActivationValues, PReluBroadcastsAPerChannelSlope) {
  testing::OnnxBuilder b;
  b.input("x", {2, 3, 2}).weight("slope", {3, 1});  // [C, 1] against [N, C, L]
  b.node("PRelu", {"x", "slope"}, "y");
  b.output("y");
  std::vector<double> x;
  for (int i = 0; i < 12; ++i) x.push_back(kPoints[static_cast<size_t>(i) % kPoints.size()]);
  const std::vector<double> slope = {0.25, -0.5, 2.0};
  const auto out = runOnnx(b, floats({2, 3, 2}, x), {{"slope", floats({3, 1}, slope)}});
  std::vector<double> expected;
  for (size_t i = 0; i < x.size(); ++i) expected.push_back(leakyRelu(x[i], slope[(i / 2) % 3]));
  expectValues(out[0], expected, "PRelu");
  EXPECT_EQ(out[0].shape, (ir::Shape{2, 3, 2}));
}

// Cast(GreaterOrEqual(x, 0), FLOAT), as jax and torch export a binary step, and Not of a Less.
TEST(ActivationValues, BinaryStepFromARuntimeComparison) {
  testing::OnnxBuilder b;
  b.input("x", {6});
  auto& zero = b.node("Constant", {}, "zero");
  auto* value = zero.add_attribute();
  value->set_name("value_float");
  value->set_type(onnx::AttributeProto::FLOAT);
  value->set_f(0.0f);
  b.node("GreaterOrEqual", {"x", "zero"}, "mask");
  testing::setIntAttribute(b.node("Cast", {"mask"}, "step"), "to", onnx::TensorProto::FLOAT);
  b.node("Less", {"x", "zero"}, "negative");
  b.node("Not", {"negative"}, "not_negative");
  b.node("Equal", {"x", "zero"}, "is_zero");
  b.node("Greater", {"x", "zero"}, "positive");
  b.node("LessOrEqual", {"x", "zero"}, "at_most_zero");
  for (const char* out : {"step", "not_negative", "is_zero", "positive", "at_most_zero"}) b.output(out);
  const auto out = runOnnx(b, floats({6}, {-1.0, -0.0, 0.0, 1e-30, 2.0, std::nan("")}));
  EXPECT_EQ(out[0].dtype, DType::kF32);
  EXPECT_EQ(out[0].floats, (std::vector<double>{0, 1, 1, 1, 1, 0}));  // -0 >= 0; NaN compares false
  EXPECT_EQ(out[1].ints, (std::vector<int64_t>{0, 1, 1, 1, 1, 1}));   // not (NaN < 0)
  EXPECT_EQ(out[2].ints, (std::vector<int64_t>{0, 1, 1, 0, 0, 0}));
  EXPECT_EQ(out[3].ints, (std::vector<int64_t>{0, 0, 0, 1, 1, 0}));
  EXPECT_EQ(out[4].ints, (std::vector<int64_t>{1, 1, 1, 0, 0, 0}));
}

// Gradients through each activation, built in the test's dtype. The activation reads a
// weight, so its input is where the feeds put it: away from the kink at 0 by more than the
// finite differences' step. y = x * act(w) against targets, mean squared error.
class ActivationGradients : public ::testing::TestWithParam<DType> {
 protected:
  int32_t onnxType() const { return GetParam() == DType::kF64 ? onnx::TensorProto::DOUBLE : onnx::TensorProto::FLOAT; }

  // Checks every weight's gradient; `setup` adds the activation reading "w", writing "act".
  void check(const std::function<void(testing::OnnxBuilder&)>& setup, int weights, const ir::Shape& w_shape,
             const Feeds& extra = {}) {
    testing::OnnxBuilder b;
    b.input("x", {-1, w_shape[0], w_shape[1]}, onnxType()).weight("w", w_shape, onnxType());
    setup(b);
    b.node("Mul", {"x", "act"}, "y");
    b.output("y");
    ImportedModel model = importOnnxModel(b.model(), OnnxImportOptions{2});
    TrainingOptions options;
    options.learning_rate = 0.1;
    options.loss = LossKind::kMse;
    const ir::Graph graph = buildTrainingGraph(model, options);
    std::mt19937 rng(61);
    std::normal_distribution<float> normal(0.0f, 0.7f);
    Feeds feeds;
    for (const ir::Tensor& t : graph.tensors()) {
      if (graph.producer(t.id) != nullptr) continue;
      ir::TensorValue value = ir::TensorValue::zeros(t.shape, t.dtype);
      if (t.role != TensorRole::kOptimizerState) {
        for (double& v : value.floats) v = normal(rng);  // drawn as floats: exact in f32 and f64
      }
      feeds[t.name] = value;
    }
    // Both signs, each at least 0.1 from 0: the step (1e-2 in f32) never crosses the kink.
    std::vector<double>& w = feeds.at("w").floats;
    for (size_t i = 0; i < w.size(); ++i) w[i] = (i % 2 ? -1.0 : 1.0) * (0.1 + 0.2 * static_cast<double>(i));
    for (const auto& [name, value] : extra) feeds[name] = value;
    EXPECT_EQ(expectGradientsMatch(graph, feeds, 0.1, finiteDifferencesFor(GetParam())), weights);
  }
};

TEST_P(ActivationGradients, LeakyRelu) {
  check([](testing::OnnxBuilder& b) { testing::setFloatAttribute(b.node("LeakyRelu", {"w"}, "act"), "alpha", 0.2f); },
        1, {2, 3});
}

TEST_P(ActivationGradients, Elu) {
  check([](testing::OnnxBuilder& b) { testing::setFloatAttribute(b.node("Elu", {"w"}, "act"), "alpha", 0.5f); }, 1,
        {2, 3});
}

TEST_P(ActivationGradients, Selu) {
  check([](testing::OnnxBuilder& b) { b.node("Selu", {"w"}, "act"); }, 1, {2, 3});
}

// Both of PRelu's inputs train: x (here the weight w) and the per-channel slope, whose
// gradient sums over the positions it was broadcast to.
TEST_P(ActivationGradients, PReluOfXAndSlope) {
  check(
      [&](testing::OnnxBuilder& b) {
        b.weight("slope", {3, 1}, onnxType());
        b.node("PRelu", {"w", "slope"}, "act");
      },
      2, {3, 4});
}

INSTANTIATE_TEST_SUITE_P(InF64AndF32, ActivationGradients, testing::gradientDTypes(), testing::dtypeParamName);

}  // namespace
}  // namespace tpusim::reference
