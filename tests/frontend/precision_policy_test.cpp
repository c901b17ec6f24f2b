// Keras-style precision policies (frontend/train/precision_policy.hpp).
#include "frontend/train/precision_policy.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "frontend/train/loss_scaling.hpp"
#include "frontend/train/training_graph.hpp"
#include "sim/common/error.hpp"
#include "tests/support/onnx_builder.hpp"

namespace tpusim {
namespace {

const ir::Tensor& named(const ir::Graph& graph, const std::string& name) {
  for (const ir::Tensor& tensor : graph.tensors()) {
    if (tensor.name == name) return tensor;
  }
  throw std::runtime_error("no tensor " + name);
}

ImportedModel mlp() {
  auto b = testing::OnnxBuilder::mlp();
  return importOnnxModel(b.model(), OnnxImportOptions{32});
}

TEST(PrecisionPolicy, Float32LeavesTheGraphAsImported) {
  ImportedModel model = mlp();
  const std::string before = model.graph.toString();
  applyPrecisionPolicy(model, PrecisionPolicy::kFloat32);
  EXPECT_EQ(model.graph.toString(), before);
}

TEST(PrecisionPolicy, MixedBfloat16ComputesInBf16WithF32VariablesAndOutputs) {
  ImportedModel model = mlp();
  const ImportedModel f32 = model;
  applyPrecisionPolicy(model, PrecisionPolicy::kMixedBfloat16);
  const ir::Graph& g = model.graph;
  int casts = 0, bf16_matmuls = 0;
  for (const ir::Op& op : g.ops()) {
    casts += op.type == ir::OpType::kCast;
    if (op.type == ir::OpType::kMatMul) {
      bf16_matmuls += g.tensor(op.outputs[0]).dtype == DType::kBF16;
      for (int input : op.inputs) EXPECT_EQ(g.tensor(input).dtype, DType::kBF16) << op.name;
    }
  }
  int weights = 0;
  for (const ir::Tensor& t : g.tensors()) {
    if (t.role != ir::TensorRole::kWeight) continue;
    ++weights;
    EXPECT_EQ(t.dtype, DType::kF32) << t.name;  // variables stay f32, under their names
    EXPECT_EQ(named(f32.graph, t.name).dtype, DType::kF32);
  }
  EXPECT_EQ(bf16_matmuls, 2);  // the builder's MLP: two Dense layers
  // One cast per weight and per float input, and one back to f32 for the output.
  EXPECT_EQ(casts, weights + 1 + 1);
  ASSERT_EQ(g.outputs().size(), f32.graph.outputs().size());
  const ir::Tensor& out = g.tensor(g.outputs()[0]);
  EXPECT_EQ(out.dtype, DType::kF32);
  EXPECT_EQ(out.name, f32.graph.tensor(f32.graph.outputs()[0]).name);
}

TEST(PrecisionPolicy, TheTrainingStepUpdatesF32WeightsFromBf16Compute) {
  ImportedModel model = mlp();
  applyPrecisionPolicy(model, PrecisionPolicy::kMixedBfloat16);
  const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{});
  int updates = 0, bf16_grad_matmuls = 0;
  for (const ir::Op& op : graph.ops()) {
    if (op.type == ir::OpType::kSgdUpdate) {
      ++updates;
      for (int input : op.inputs) EXPECT_EQ(graph.tensor(input).dtype, DType::kF32) << op.name;
    }
    if (op.type == ir::OpType::kMatMul && graph.tensor(op.outputs[0]).role == ir::TensorRole::kGradient) {
      bf16_grad_matmuls += graph.tensor(op.outputs[0]).dtype == DType::kBF16;
    }
    // The loss is taken in f32.
    if (op.type == ir::OpType::kSoftmaxCrossEntropy) {
      EXPECT_EQ(graph.tensor(op.inputs[0]).dtype, DType::kF32);
    }
  }
  EXPECT_EQ(updates, 4);
  EXPECT_GT(bf16_grad_matmuls, 0);
}

TEST(PrecisionPolicy, ALossInTheModelReadsF32) {
  ImportedModel model;
  ir::Graph& g = model.graph;
  const int x = g.addInput("x", {4, 8}, DType::kF32, ir::TensorRole::kInput);
  const int w = g.addWeight("w", {8, 3}, DType::kF32);
  const int labels = g.addInput("labels", {4}, DType::kInt64, ir::TensorRole::kLabel);
  g.markOutput(g.softmaxCrossEntropy("loss", g.matmul("logits", x, w, false, false), labels));
  model.batch = 4;
  model.has_loss = true;
  applyPrecisionPolicy(model, PrecisionPolicy::kMixedBfloat16);
  for (const ir::Op& op : model.graph.ops()) {
    if (op.type != ir::OpType::kSoftmaxCrossEntropy) continue;
    EXPECT_EQ(model.graph.tensor(op.inputs[0]).dtype, DType::kF32);
    EXPECT_EQ(model.graph.tensor(op.inputs[1]).dtype, DType::kInt64);  // labels are never cast
    EXPECT_EQ(model.graph.tensor(op.outputs[0]).dtype, DType::kF32);
  }
  EXPECT_EQ(named(model.graph, "labels").dtype, DType::kInt64);
}

TEST(PrecisionPolicy, MixedFloat16ComputesInF16) {
  ImportedModel model = mlp();
  applyPrecisionPolicy(model, PrecisionPolicy::kMixedFloat16);
  int f16_matmuls = 0;
  for (const ir::Op& op : model.graph.ops()) {
    if (op.type == ir::OpType::kMatMul) f16_matmuls += model.graph.tensor(op.inputs[0]).dtype == DType::kF16;
  }
  EXPECT_EQ(f16_matmuls, 2);  // the test MLP's two Gemms
}

// The loss-scaled training graph: the loss gradient is seeded with the scale, every weight's
// update reads where(finite, g, 0) / S, and the finite flag is an output.
TEST(LossScaling, SeedsTheScaleChecksEveryGradientAndGatesEachUpdate) {
  ImportedModel model = mlp();
  applyPrecisionPolicy(model, PrecisionPolicy::kMixedFloat16);
  TrainingOptions options;
  options.loss_scaling = true;
  const ir::Graph g = buildTrainingGraph(model, options);
  const ir::Tensor& scale = named(g, kLossScaleTensor);
  EXPECT_EQ(scale.role, ir::TensorRole::kOptimizerState);
  EXPECT_TRUE(scale.shape.empty());
  const ir::Tensor& finite = named(g, kGradientsFiniteTensor);
  EXPECT_EQ(finite.dtype, DType::kBool);
  EXPECT_NE(std::find(g.outputs().begin(), g.outputs().end(), finite.id), g.outputs().end());
  int seeds = 0, sums = 0, updates = 0;
  for (const ir::Op& op : g.ops()) {
    if (op.type == ir::OpType::kMul && op.inputs[1] == scale.id) ++seeds;
    if (op.type == ir::OpType::kReduce) ++sums;
    if (op.type != ir::OpType::kSgdUpdate) continue;
    ++updates;
    const ir::Op* unscale = g.producer(op.inputs[1]);
    ASSERT_NE(unscale, nullptr);
    ASSERT_EQ(unscale->type, ir::OpType::kMul);
    const ir::Op* kept = g.producer(unscale->inputs[0]);
    ASSERT_NE(kept, nullptr);
    EXPECT_EQ(kept->type, ir::OpType::kWhere);
    EXPECT_EQ(kept->inputs[0], finite.id);
  }
  EXPECT_EQ(seeds, 1);
  EXPECT_EQ(updates, 4);  // two Gemms, weight and bias
  EXPECT_EQ(sums, 4);     // one sum per gradient
  // Without loss scaling, none of it.
  options.loss_scaling = false;
  const ir::Graph plain = buildTrainingGraph(model, options);
  for (const ir::Tensor& tensor : plain.tensors()) EXPECT_EQ(tensor.name.find("loss_scale"), std::string::npos);
}

TEST(PrecisionPolicy, NamesAndTheirErrors) {
  EXPECT_EQ(parsePrecisionPolicy("float32"), PrecisionPolicy::kFloat32);
  EXPECT_EQ(parsePrecisionPolicy("mixed_bfloat16"), PrecisionPolicy::kMixedBfloat16);
  EXPECT_STREQ(precisionPolicyName(PrecisionPolicy::kMixedBfloat16), "mixed_bfloat16");
  const auto kind = [](const std::string& name) {
    try {
      parsePrecisionPolicy(name);
    } catch (const Error& error) {
      return error.kind();
    }
    return ErrorKind::kInternal;
  };
  EXPECT_EQ(parsePrecisionPolicy("mixed_float16"), PrecisionPolicy::kMixedFloat16);
  EXPECT_STREQ(precisionPolicyName(PrecisionPolicy::kMixedFloat16), "mixed_float16");
  EXPECT_TRUE(needsLossScaling(PrecisionPolicy::kMixedFloat16));
  EXPECT_FALSE(needsLossScaling(PrecisionPolicy::kMixedBfloat16));
  EXPECT_EQ(kind("bf16"), ErrorKind::kInvalidConfig);
}

}  // namespace
}  // namespace tpusim
