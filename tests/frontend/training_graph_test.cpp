#include "frontend/train/training_graph.hpp"

#include <gtest/gtest.h>

#include <map>

#include "sim/common/error.hpp"
#include "tests/support/onnx_builder.hpp"
#include "tests/support/op_counts.hpp"

namespace tpusim {
namespace {

using testing::countOps;

TEST(TrainingGraph, MlpForwardBackwardAndSgd) {
  auto b = testing::OnnxBuilder::mlp();
  const ImportedModel model = importOnnxModel(b.model(), OnnxImportOptions{32});
  const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{});
  // forward 5 + loss 1; backward: loss grad 1, 2 bias grads, 3 weight/activation matmuls
  // (no gradient for the input x), 1 relu grad; 4 SGD updates.
  EXPECT_EQ(graph.ops().size(), 17u) << graph.toString();
  EXPECT_EQ(countOps(graph, ir::OpType::kMatMul), 2 + 3);
  EXPECT_EQ(countOps(graph, ir::OpType::kReduceSumTo), 2);
  EXPECT_EQ(countOps(graph, ir::OpType::kSgdUpdate), 4);
  EXPECT_EQ(countOps(graph, ir::OpType::kSoftmaxCrossEntropyGrad), 1);
  // Each op records its phase: the forward 6, the backward 7, the updates 4.
  std::map<ir::Phase, int> phases;
  for (const ir::Op& op : graph.ops()) ++phases[op.phase];
  EXPECT_EQ(phases,
            (std::map<ir::Phase, int>{{ir::Phase::kForward, 6}, {ir::Phase::kBackward, 7}, {ir::Phase::kUpdate, 4}}));
  // The added loss reads a new int64 label input of [batch].
  bool has_labels = false;
  for (const ir::Tensor& t : graph.tensors()) {
    if (t.name == "labels") has_labels = t.dtype == DType::kInt64 && t.shape == ir::Shape{32};
  }
  EXPECT_TRUE(has_labels);
  // Each update overwrites its weight.
  for (const ir::Op& op : graph.ops()) {
    if (op.type == ir::OpType::kSgdUpdate) {
      EXPECT_EQ(graph.tensor(op.outputs[0]).alias_of, op.inputs[0]);
    }
  }
}

// y = op(a) op(b) with both operands weights, in every transpose combination:
// the gradient builders check that each gradient has its weight's shape.
class MatMulGradient : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(MatMulGradient, GradientsHaveOperandShapes) {
  const auto [ta, tb] = GetParam();
  ImportedModel model;
  ir::Graph& g = model.graph;
  const int a = g.addWeight("a", ta ? ir::Shape{3, 6} : ir::Shape{6, 3}, DType::kF32);  // op(a) is [6, 3]
  const int b = g.addWeight("b", tb ? ir::Shape{5, 3} : ir::Shape{3, 5}, DType::kF32);  // op(b) is [3, 5]
  g.markOutput(g.matmul("y", a, b, ta, tb));
  model.batch = 6;
  const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{});
  EXPECT_EQ(countOps(graph, ir::OpType::kSgdUpdate), 2);
}

INSTANTIATE_TEST_SUITE_P(AllTransposes, MatMulGradient, ::testing::Combine(::testing::Bool(), ::testing::Bool()));

// An unrolled loop's steps (unit-step slices covering one axis) give their input one Concat
// of their gradients, not a zero-filled copy of it per step added up (quadratic in the steps).
TEST(TrainingGraph, SlicesCoveringAnAxisJoinTheirGradientsInOneConcat) {
  ImportedModel model;
  ir::Graph& g = model.graph;
  const int x = g.addInput("x", {4, 6}, DType::kF32, ir::TensorRole::kInput);
  const int w = g.addWeight("w", {6, 8}, DType::kF32);
  const int h = g.matmul("h", x, w, false, false);  // [4, 8], sliced into 4 steps of 2 columns
  int y = -1;
  for (int64_t step = 0; step < 4; ++step) {
    const int part = g.slice("step" + std::to_string(step), h, 1, 2 * step, 2, ir::TensorRole::kActivation);
    y = y < 0 ? part : g.add("acc" + std::to_string(step), y, g.relu("relu" + std::to_string(step), part));
  }
  g.markOutput(y);
  model.batch = 4;
  const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{});
  EXPECT_EQ(countOps(graph, ir::OpType::kSliceGrad), 0) << graph.toString();
  EXPECT_EQ(countOps(graph, ir::OpType::kConcat), 1);

  ImportedModel partial;  // rows 0-1 and 3 of 5: two runs, each placed by a SliceGrad
  ir::Graph& p = partial.graph;
  const int v = p.addWeight("v", {5, 3}, DType::kF32);
  const int a = p.slice("a", v, 0, 0, 2, ir::TensorRole::kActivation);
  const int b = p.slice("b", v, 0, 3, 1, ir::TensorRole::kActivation);
  p.markOutput(p.concat("out", {a, b}, 0));
  partial.batch = 3;
  const ir::Graph partial_graph = buildTrainingGraph(partial, TrainingOptions{});
  EXPECT_EQ(countOps(partial_graph, ir::OpType::kSliceGrad), 2) << partial_graph.toString();
}

TEST(TrainingGraph, SharedTensorGradientsAreSummed) {
  ImportedModel model;
  ir::Graph& g = model.graph;
  const int x = g.addInput("x", {4, 8}, DType::kF32, ir::TensorRole::kInput);
  const int w = g.addWeight("w", {8, 8}, DType::kF32);
  const int h = g.matmul("h", x, w, false, false);
  const int y = g.add("y", g.relu("r1", h), g.relu("r2", h));  // h feeds two ops
  g.markOutput(y);
  model.batch = 4;
  const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{});
  int sums = 0;
  for (const ir::Op& op : graph.ops())
    sums += op.type == ir::OpType::kAdd && op.name.find("grad_sum") != std::string::npos;
  EXPECT_EQ(sums, 1);
}

// A mean's gradient is dy broadcast back to the input's shape, scaled by the count: the builder
// held the input's shape through a reference into the graph's tensors while it added the
// gradient's tensors, and when the tensor vector grew there the reference dangled (a
// heap-use-after-free found by ASan, scripts/sanitize.sh, in the Python tests). Constants
// before the reduction put that growth at every point of the gradient's construction; the
// ASan build checks every access, other builds the gradient's shape.
TEST(TrainingGraph, AMeansGradientBuildsWhereverTheGraphGrows) {
  for (int before = 0; before < 40; ++before) {
    ImportedModel model;
    ir::Graph& g = model.graph;
    for (int i = 0; i < before; ++i) g.addConstant("pad" + std::to_string(i), {1}, DType::kF32);
    const int w = g.addWeight("w", {4, 6, 3}, DType::kF32);
    g.markOutput(g.reduce("mean", w, ir::Reduction::kMean, {2}, false));
    model.batch = 4;
    const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{});
    bool broadcast = false;
    for (const ir::Op& op : graph.ops()) {
      if (op.type == ir::OpType::kBroadcastTo) {
        broadcast = true;
        EXPECT_EQ(graph.tensor(op.outputs[0]).shape, (ir::Shape{4, 6, 3})) << before;
      }
    }
    EXPECT_TRUE(broadcast) << before;
  }
}

TEST(TrainingGraph, InferenceDropsTheModelsLoss) {
  auto b = testing::OnnxBuilder::mlpWithLoss();
  const ImportedModel model = importOnnxModel(b.model(), OnnxImportOptions{4});
  const ir::Graph inference = buildInferenceGraph(model);
  EXPECT_EQ(countOps(inference, ir::OpType::kSoftmaxCrossEntropy), 0);
  ASSERT_EQ(inference.outputs().size(), 1u);
  EXPECT_EQ(inference.tensor(inference.outputs()[0]).shape, (ir::Shape{4, 4}));
  // Training uses the model's own loss rather than adding another.
  const ir::Graph training = buildTrainingGraph(model, TrainingOptions{});
  EXPECT_EQ(countOps(training, ir::OpType::kSoftmaxCrossEntropy), 1);
}

// SoftmaxCrossEntropyLoss other than [N, C] mean is imported as LogSoftmax + NllLoss; both have
// gradients, so it trains. A loss with reduction none is not a scalar, and has none.
ImportedModel mlpWithLossReduction(const std::string& reduction) {
  auto b = testing::OnnxBuilder::mlpWithLoss();
  auto* attr = b.model().mutable_graph()->mutable_node(3)->add_attribute();  // the loss node
  attr->set_name("reduction");
  attr->set_type(onnx::AttributeProto::STRING);
  attr->set_s(reduction);
  return importOnnxModel(b.model(), OnnxImportOptions{4});
}

TEST(TrainingGraph, DecomposedLossTrains) {
  const ir::Graph graph = buildTrainingGraph(mlpWithLossReduction("sum"), TrainingOptions{});
  EXPECT_EQ(countOps(graph, ir::OpType::kNllLossGrad), 1);
  EXPECT_EQ(countOps(graph, ir::OpType::kSgdUpdate), 4);
}

TEST(TrainingGraph, LossesWithoutAGradientAreClearlyUnsupported) {
  const ImportedModel model = mlpWithLossReduction("none");
  try {
    buildTrainingGraph(model, TrainingOptions{});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(error.what()).find("NllLoss"), std::string::npos) << error.what();
  }
  // Inference still runs it: the log-probabilities become the output.
  const ir::Graph inference = buildInferenceGraph(model);
  EXPECT_EQ(inference.tensor(inference.outputs()[0]).shape, (ir::Shape{4, 4}));
}

TEST(TrainingGraph, OutputsThatCannotTakeALossAreErrors) {
  ImportedModel model;
  const int x = model.graph.addInput("x", {4, 8, 2}, DType::kF32, ir::TensorRole::kInput);
  model.graph.markOutput(model.graph.relu("r", x));
  EXPECT_THROW(buildTrainingGraph(model, TrainingOptions{}), Error);
}

}  // namespace
}  // namespace tpusim

namespace tpusim {
namespace {

TEST(TrainingGraph, ALossOptionForAModelWithItsOwnLossIsAConfigError) {
  auto b = testing::OnnxBuilder::mlpWithLoss();
  const ImportedModel model = importOnnxModel(b.model(), OnnxImportOptions{4});
  TrainingOptions options;
  options.loss = LossKind::kMse;
  try {
    buildTrainingGraph(model, options);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kInvalidConfig);
    EXPECT_NE(std::string(error.what()).find("computes its own loss"), std::string::npos) << error.what();
  }
}

// The phase of every op of a step with micro-batches, loss scaling, rematerialization and
// Adam: what the forward computes (and the loss sums) is forward, a recomputation or a
// gradient is backward, the optimizer update, and the check and gating loss scaling.
TEST(TrainingGraph, EveryOpRecordsItsPhase) {
  auto b = testing::OnnxBuilder::mlp();
  const ImportedModel model = importOnnxModel(b.model(), OnnxImportOptions{2});
  TrainingOptions options;
  options.micro_batches = 2;
  options.loss_scaling = true;
  options.rematerialize = Remat::kAll;
  options.optimizer.kind = ir::OptimizerKind::kAdam;
  const ir::Graph graph = buildTrainingGraph(model, options);
  std::map<ir::Phase, int> phases;
  // The test knows each op by the name its builder gave it.
  const auto has = [](const ir::Op& op, const char* part) { return op.name.find(part) != std::string::npos; };
  for (const ir::Op& op : graph.ops()) {
    ++phases[op.phase];
    ir::Phase expected = ir::Phase::kForward;
    if (op.type == ir::OpType::kOptimizerUpdate) {
      expected = ir::Phase::kUpdate;
    } else if (op.name.rfind("loss_scale.", 0) == 0 || has(op, ".grad_scaled.sum") || has(op, ".grad_kept") ||
               has(op, ".grad_unscaled")) {
      expected = ir::Phase::kLossScaling;
    } else if (has(op, ".remat") || has(op, ".grad")) {
      expected = ir::Phase::kBackward;
    }
    EXPECT_STREQ(ir::phaseName(op.phase), ir::phaseName(expected)) << op.name;
  }
  // Forward: x and labels sliced twice (4), the 6 ops of the forward and loss per micro-batch
  // (12), the loss sum and mean (2).
  EXPECT_EQ(phases[ir::Phase::kForward], 4 + 12 + 2) << graph.toString();
  EXPECT_GT(phases[ir::Phase::kBackward], 0);
  EXPECT_EQ(phases[ir::Phase::kUpdate], 4 * 3 + 1);  // m, v and the parameter per weight; the step count
  EXPECT_GT(phases[ir::Phase::kLossScaling], 0);
  EXPECT_EQ(phases[ir::Phase::kCollective], 0);  // data parallelism adds them (frontend/passes/data_parallel)
  // The IR's text marks every op that is not forward with its phase.
  EXPECT_NE(graph.toString().find(" loss_scaling  # loss_scale.finite"), std::string::npos) << graph.toString();
}

TEST(TrainingGraph, MicroBatchesSliceTheStepInputs) {
  auto b = testing::OnnxBuilder::mlp();
  const ImportedModel model = importOnnxModel(b.model(), OnnxImportOptions{2});  // micro-batches of 2
  TrainingOptions options;
  options.micro_batches = 3;
  const ir::Graph graph = buildTrainingGraph(model, options);
  // x [6, 16] and labels [6], each sliced into 3 row ranges.
  EXPECT_EQ(countOps(graph, ir::OpType::kSlice), 2 * 3);
  EXPECT_EQ(countOps(graph, ir::OpType::kSoftmaxCrossEntropyGrad), 3);
  EXPECT_EQ(countOps(graph, ir::OpType::kSgdUpdate), 4);
  for (const ir::Tensor& t : graph.tensors()) {
    if (t.name == "x") {
      EXPECT_EQ(t.shape, (ir::Shape{6, 16}));
    }
  }
  EXPECT_EQ(graph.tensor(graph.outputs().back()).role, ir::TensorRole::kLoss);
}

}  // namespace
}  // namespace tpusim
