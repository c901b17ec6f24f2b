// Post-training int8 quantization (frontend/train/int8_quantization.hpp): the rewrite, the
// weight closed forms, and the int8 graph's values on the CPU executor against float32's.
#include "frontend/train/int8_quantization.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "frontend/train/precision_policy.hpp"
#include "reference/cpu/cpu_executor.hpp"
#include "sim/common/error.hpp"
#include "sim/common/numerics.hpp"
#include "tests/support/onnx_builder.hpp"

namespace tpusim {
namespace {

using ir::TensorValue;

const ir::Tensor* find(const ir::Graph& graph, const std::string& name) {
  for (const ir::Tensor& tensor : graph.tensors()) {
    if (tensor.name == name) return &tensor;
  }
  return nullptr;
}

// Uniform in [-1, 1), rounded to f32; deterministic.
TensorValue randomF32(const ir::Shape& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  TensorValue value = TensorValue::zeros(shape, DType::kF32);
  for (double& v : value.floats) v = static_cast<float>(uniform(rng));
  return value;
}

// Gives every f32 weight of `model` random values (the builder's are zeros).
void randomizeWeights(ImportedModel& model) {
  uint64_t seed = 1;
  for (auto& [name, value] : model.initializers) {
    if (value.dtype == DType::kF32) value = randomF32(value.shape, seed++);
  }
}

// The graph's first output's values for input `x`.
std::vector<double> outputOf(const ImportedModel& model, const std::string& input, const TensorValue& x) {
  std::map<std::string, TensorValue> feeds = model.initializers;
  feeds[input] = x;
  const std::vector<TensorValue> values = reference::CpuExecutor(model.graph, {}).run(feeds);
  return values[static_cast<size_t>(model.graph.outputs()[0])].floats;
}

// max |a - b| / max |b|
double normwise(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return diff / scale;
}

TEST(Int8Quantization, WeightScalesArePerOutputChannelAndRoundHalfToEven) {
  // w [K=2, N=2] = [[1, -2], [0.5, 4]], channels along columns (stride 1).
  // column 0: max 1, scale 1/127: 1 -> 127, 0.5 -> 63.5 -> 64 (even);
  // column 1: max 4, scale 4/127: -2 -> -63.5 -> -64 (even), 4 -> 127.
  const TensorValue w{{2, 2}, DType::kF32, {1.0, -2.0, 0.5, 4.0}, {}};
  const QuantizedWeight q = quantizeWeight(w, 2, 1, {2});
  EXPECT_EQ(q.values.dtype, DType::kInt8);
  EXPECT_EQ(q.values.ints, (std::vector<int64_t>{127, -64, 64, 127}));
  EXPECT_EQ(q.scales.floats[0], static_cast<float>(1.0 / 127.0));
  EXPECT_EQ(q.scales.floats[1], static_cast<float>(4.0 / 127.0));
  // Rows as channels (a transposed [N, K] weight: stride K = 2); an all-zero channel has scale 1.
  const QuantizedWeight rows = quantizeWeight(TensorValue{{2, 2}, DType::kF32, {0.0, 0.0, -3.0, 1.5}, {}}, 2, 2, {2});
  EXPECT_EQ(rows.scales.floats[0], 1.0);
  EXPECT_EQ(rows.values.ints, (std::vector<int64_t>{0, 0, -127, 64}));  // 1.5 / (3/127) = 63.5 -> 64
}

TEST(Int8Quantization, MatmulsRunInt8IntoInt32WithInt8WeightsAndF32Scales) {
  ImportedModel model = importOnnxModel(testing::OnnxBuilder::mlp().model(), OnnxImportOptions{32});
  applyPrecisionPolicy(model, PrecisionPolicy::kInt8);
  const ir::Graph& g = model.graph;
  int int8_matmuls = 0, rounds = 0;
  for (const ir::Op& op : g.ops()) {
    rounds += op.type == ir::OpType::kUnary && op.unary == ir::UnaryKind::kRound;
    if (op.type != ir::OpType::kMatMul) continue;
    ++int8_matmuls;
    EXPECT_EQ(g.tensor(op.inputs[0]).dtype, DType::kInt8);
    EXPECT_EQ(g.tensor(op.inputs[1]).dtype, DType::kInt8);
    EXPECT_EQ(g.tensor(op.outputs[0]).dtype, DType::kInt32);
  }
  EXPECT_EQ(int8_matmuls, 2);
  EXPECT_EQ(rounds, 2);  // one activation quantize per matmul
  // Gemm's weight [N=8, K=16] read transposed: 8 channels. The f32 weight is gone.
  EXPECT_EQ(find(g, "w1"), nullptr);
  ASSERT_NE(find(g, "w1/int8"), nullptr);
  EXPECT_EQ(find(g, "w1/int8")->dtype, DType::kInt8);
  EXPECT_EQ(find(g, "w1/scale")->shape, (ir::Shape{8}));
  // Weight bytes: 8 x 16 + 4 x 8 int8 elements, 8 + 4 f32 scales, and the f32 biases 8 + 4
  // (not matmul weights: their Add stays f32).
  uint64_t weight_bytes = 0;
  for (const ir::Tensor& t : g.tensors()) weight_bytes += t.role == ir::TensorRole::kWeight ? t.bytes() : 0;
  EXPECT_EQ(weight_bytes, (8u * 16 + 4 * 8) * 1 + (8 + 4) * 4 + (8 + 4) * 4);
  EXPECT_EQ(model.initializers.count("w1"), 0u);
  EXPECT_EQ(model.initializers.at("w1/int8").ints.size(), 128u);
  // The output is f32 again.
  EXPECT_EQ(g.tensor(g.outputs()[0]).dtype, DType::kF32);
  EXPECT_EQ(g.tensor(g.outputs()[0]).name, "logits");
}

TEST(Int8Quantization, MlpOutputsAreNearFloat32ButNotEqual) {
  ImportedModel f32 = importOnnxModel(testing::OnnxBuilder::mlp().model(), OnnxImportOptions{32});
  randomizeWeights(f32);
  ImportedModel int8 = f32;
  applyPrecisionPolicy(int8, PrecisionPolicy::kInt8);
  const TensorValue x = randomF32({32, 16}, 99);
  const double error = normwise(outputOf(int8, "x", x), outputOf(f32, "x", x));
  // Two int8 layers (steps of max/127 on both operands), f32 between them.
  EXPECT_LT(error, 3e-2);
  EXPECT_GT(error, 1e-4);  // a real quantization
}

// A PyTorch export's Linear: MatMul(x, Transpose(w)) with w [N, K].
ImportedModel exportedLinear(bool with_transpose) {
  testing::OnnxBuilder b;
  b.input("x", {32, 16}).weight("w", {8, 16});
  if (with_transpose) {
    b.node("Transpose", {"w"}, "wt");
    b.node("MatMul", {"x", "wt"}, "y");
  } else {
    auto& gemm = b.node("Gemm", {"x", "w"}, "y");  // the same product, the weight read transposed
    auto* attr = gemm.add_attribute();
    attr->set_name("transB");
    attr->set_type(onnx::AttributeProto::INT);
    attr->set_i(1);
  }
  b.output("y");
  ImportedModel model = importOnnxModel(b.model(), OnnxImportOptions{32});
  randomizeWeights(model);
  return model;
}

TEST(Int8Quantization, AWeightReadThroughATransposeIsQuantizedLikeTransB) {
  ImportedModel viewed = exportedLinear(true), direct = exportedLinear(false);
  applyPrecisionPolicy(viewed, PrecisionPolicy::kInt8);
  applyPrecisionPolicy(direct, PrecisionPolicy::kInt8);
  int int8_matmuls = 0;
  for (const ir::Op& op : viewed.graph.ops()) {
    EXPECT_NE(op.type, ir::OpType::kTranspose) << "the transpose only the quantized product read is dropped";
    if (op.type != ir::OpType::kMatMul) continue;
    ++int8_matmuls;
    EXPECT_TRUE(op.transpose_b);
    EXPECT_EQ(viewed.graph.tensor(op.inputs[1]).name, "w/int8");
  }
  EXPECT_EQ(int8_matmuls, 1);
  EXPECT_EQ(find(viewed.graph, "w"), nullptr);  // no f32 copy of the weight is kept
  EXPECT_EQ(find(viewed.graph, "w/scale")->shape, (ir::Shape{8}));  // per output channel (N = 8)
  EXPECT_EQ(viewed.initializers.at("w/int8").ints, direct.initializers.at("w/int8").ints);
  const TensorValue x = randomF32({32, 16}, 7);
  EXPECT_EQ(outputOf(viewed, "x", x), outputOf(direct, "x", x));
}

TEST(Int8Quantization, ConvOutputsAreNearFloat32ButNotEqual) {
  // x [2, 3, 8, 8] -> Conv w [4, 3, 3, 3] (pad 1) -> Relu -> y
  ImportedModel f32;
  ir::Graph& g = f32.graph;
  const int x = g.addInput("x", {2, 3, 8, 8}, DType::kF32, ir::TensorRole::kInput);
  const int w = g.addWeight("w", {4, 3, 3, 3}, DType::kF32);
  ir::ConvGeometry geometry;
  geometry.pads = {1, 1, 1, 1};
  const int y = g.relu("relu", g.conv("conv", x, w, geometry));
  g.rename(y, "y");
  g.markOutput(y);
  f32.initializers["w"] = randomF32({4, 3, 3, 3}, 5);
  ImportedModel int8 = f32;
  applyPrecisionPolicy(int8, PrecisionPolicy::kInt8);
  EXPECT_EQ(find(int8.graph, "w/scale")->shape, (ir::Shape{4, 1, 1}));  // broadcasts over [N, M, OH, OW]
  const TensorValue input = randomF32({2, 3, 8, 8}, 7);
  const double error = normwise(outputOf(int8, "x", input), outputOf(f32, "x", input));
  EXPECT_LT(error, 3e-2);
  EXPECT_GT(error, 1e-4);
}

TEST(Int8Quantization, AnAllZeroActivationQuantizesToZeros) {
  ImportedModel model = importOnnxModel(testing::OnnxBuilder::mlp().model(), OnnxImportOptions{4});
  randomizeWeights(model);
  ImportedModel f32 = model;
  applyPrecisionPolicy(model, PrecisionPolicy::kInt8);
  const TensorValue zeros = TensorValue::zeros({4, 16}, DType::kF32);
  const std::vector<double> got = outputOf(model, "x", zeros);
  for (double v : got) EXPECT_TRUE(std::isfinite(v));
  // Zeros in: the logits are the biases' path only, near float32's.
  EXPECT_LT(normwise(got, outputOf(f32, "x", zeros)), 3e-2);
}

TEST(Int8Quantization, IsForInferenceOnly) {
  EXPECT_EQ(parsePrecisionPolicy("int8"), PrecisionPolicy::kInt8);
  EXPECT_STREQ(precisionPolicyName(PrecisionPolicy::kInt8), "int8");
  EXPECT_FALSE(needsLossScaling(PrecisionPolicy::kInt8));
  EXPECT_NO_THROW(checkPolicyForMode(PrecisionPolicy::kInt8, "inference"));
  EXPECT_NO_THROW(checkPolicyForMode(PrecisionPolicy::kMixedBfloat16, "training"));
  try {
    checkPolicyForMode(PrecisionPolicy::kInt8, "training");
    FAIL() << "int8 training was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(error.what()).find("--mode inference"), std::string::npos);
  }
}

}  // namespace
}  // namespace tpusim
