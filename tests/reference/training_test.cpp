// The training features on the CPU executor: the new ops' gradients against
// central finite differences, each optimizer against a closed-form reference
// over several steps, the warmup schedule, gradient accumulation against the
// full batch, and rematerialization's bit-identical gradients.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "frontend/train/graph_transforms.hpp"
#include "frontend/train/training_graph.hpp"
#include "reference/cpu/cpu_executor.hpp"
#include "reference/cpu/training_kernels.hpp"
#include "sim/common/error.hpp"
#include "tests/support/gradient_check.hpp"
#include "tests/support/onnx_builder.hpp"

namespace tpusim::reference {
namespace {

using ir::OptimizerKind;
using ir::TensorRole;

using testing::expectGradientsMatch;
using testing::Feeds;
using testing::finiteDifferencesFor;

// Random feeds for every tensor no op produces: labels cycle through `classes`, optimizer
// state starts at zero (the step at 0).
Feeds randomFeeds(const ir::Graph& graph, int64_t classes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.5f);
  Feeds feeds;
  for (const ir::Tensor& t : graph.tensors()) {
    if (graph.producer(t.id) != nullptr) continue;
    ir::TensorValue value = ir::TensorValue::zeros(t.shape, t.dtype);
    if (t.role == TensorRole::kLabel && !ir::TensorValue::isFloating(t.dtype)) {
      for (size_t i = 0; i < value.ints.size(); ++i) value.ints[i] = static_cast<int64_t>(i) % classes;
    } else if (t.role != TensorRole::kOptimizerState) {
      for (double& v : value.floats) v = dist(rng);  // drawn as floats: exact in f32 and f64
    }
    feeds[t.name] = value;
  }
  return feeds;
}

int tensorNamed(const ir::Graph& graph, const std::string& name) {
  for (const ir::Tensor& t : graph.tensors()) {
    if (t.name == name) return t.id;
  }
  throw std::runtime_error("no tensor " + name);
}

double lossOf(const ir::Graph& graph, const Feeds& feeds) {
  return CpuExecutor(graph, CpuOptions{}).run(feeds)[static_cast<size_t>(graph.outputs().back())].floats[0];
}

// Each weight's gradient recovered from its SGD update (w - w') / rate.
std::map<std::string, std::vector<double>> gradients(const ir::Graph& graph, const Feeds& feeds, double rate) {
  const auto values = CpuExecutor(graph, CpuOptions{}).run(feeds);
  std::map<std::string, std::vector<double>> grads;
  for (const ir::Tensor& t : graph.tensors()) {
    if (t.alias_of < 0 || t.role != TensorRole::kWeight) continue;
    const std::string weight = graph.tensor(t.alias_of).name;
    std::vector<double>& g = grads[weight];
    for (size_t i = 0; i < feeds.at(weight).floats.size(); ++i) {
      g.push_back((feeds.at(weight).floats[i] - values[static_cast<size_t>(t.id)].floats[i]) / rate);
    }
  }
  return grads;
}

class LossGradients : public ::testing::TestWithParam<DType> {};

TEST_P(LossGradients, Mse) {
  const DType dtype = GetParam();
  ImportedModel model;
  ir::Graph& g = model.graph;
  const int x = g.addInput("x", {3, 5}, dtype, TensorRole::kInput);
  const int h = g.matmul("mm", x, g.addWeight("w", {5, 4}, dtype), false, false);
  g.markOutput(g.add("bias", h, g.addWeight("b", {4}, dtype)));
  TrainingOptions options;
  options.learning_rate = 0.1;
  options.loss = LossKind::kMse;
  const ir::Graph graph = buildTrainingGraph(model, options);
  EXPECT_EQ(graph.tensor(tensorNamed(graph, "targets")).shape, (ir::Shape{3, 4}));
  EXPECT_EQ(expectGradientsMatch(graph, randomFeeds(graph, 4, 5), 0.1, finiteDifferencesFor(dtype)), 2);
}

// The softmax cross-entropy tpusim adds, fused, over [N, C] logits.
TEST_P(LossGradients, SoftmaxCrossEntropy) {
  const DType dtype = GetParam();
  ImportedModel model;
  ir::Graph& g = model.graph;
  const int x = g.addInput("x", {5, 3}, dtype, TensorRole::kInput);
  g.markOutput(g.matmul("mm", x, g.addWeight("w", {3, 4}, dtype), false, false));
  const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{0.1});
  EXPECT_EQ(expectGradientsMatch(graph, randomFeeds(graph, 4, 7), 0.1, finiteDifferencesFor(dtype)), 1);
}

INSTANTIATE_TEST_SUITE_P(InF64AndF32, LossGradients, testing::gradientDTypes(), testing::dtypeParamName);

TEST(TrainingOps, MseClosedForm) {
  // x = (1, 2, 3, 4), t = (0, 2, 5, 4): (1 + 0 + 4 + 0) / 4 = 1.25; grad 2 (x - t) / 4.
  const std::vector<double> x = {1, 2, 3, 4};
  const std::vector<double> t = {0, 2, 5, 4};
  EXPECT_EQ(mseLoss(x, t), 1.25);
  std::vector<double> grad(4);
  mseLossGrad(x, t, grad);
  EXPECT_EQ(grad, (std::vector<double>{0.5, 0.0, -1.0, 0.0}));
}

// Scores -> LogSoftmax (or Softmax then Log) -> NllLoss, the model's own loss.
ir::Graph nllModel(ir::Reduction reduction, bool class_weights, bool via_softmax, DType dtype) {
  ImportedModel model;
  ir::Graph& g = model.graph;
  const int x = g.addInput("x", {6, 5}, dtype, TensorRole::kInput);
  const int scores = g.matmul("mm", x, g.addWeight("w", {5, 4}, dtype), false, false);
  const int logp = via_softmax ? g.unary(ir::UnaryKind::kLog, "log", g.softmax("softmax", scores, 1, false))
                               : g.softmax("log_softmax", scores, 1, true);
  const int labels = g.addInput("labels", {6}, DType::kInt64, TensorRole::kLabel);
  const int weights = class_weights ? g.addWeight("class_weights", {4}, dtype) : -1;
  g.markOutput(g.nllLoss("nll", logp, labels, weights, reduction, 3));  // label 3 is ignored
  if (class_weights) g.freeze(weights);
  model.has_loss = true;
  return buildTrainingGraph(model, TrainingOptions{0.1});
}

class NllGradient : public ::testing::TestWithParam<std::tuple<bool, bool, bool, DType>> {};

TEST_P(NllGradient, MatchesFiniteDifferences) {
  const auto [mean, class_weights, via_softmax, dtype] = GetParam();
  const ir::Graph graph =
      nllModel(mean ? ir::Reduction::kMean : ir::Reduction::kSum, class_weights, via_softmax, dtype);
  Feeds feeds = randomFeeds(graph, 4, 9);
  if (class_weights) feeds["class_weights"].floats = {0.5, 2.0, 1.0, 1.5};
  EXPECT_EQ(expectGradientsMatch(graph, feeds, 0.1, finiteDifferencesFor(dtype)), 1);
}

INSTANTIATE_TEST_SUITE_P(MeanSumWeightsSoftmax, NllGradient,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool(), ::testing::Bool(),
                                            testing::gradientDTypes()));

TEST(TrainingOps, WarmupIsLinearThenFlat) {
  ir::OptimizerConfig c;
  c.learning_rate = 0.5;
  c.warmup_steps = 4;
  // lr x min(1, (step + 1) / 4): 0.125, 0.25, 0.375, 0.5, 0.5
  const double expected[] = {0.125, 0.25, 0.375, 0.5, 0.5};
  for (int64_t step = 0; step < 5; ++step) EXPECT_DOUBLE_EQ(scheduledRate(c, 1.0, step), expected[step]);
  c.warmup_steps = 0;
  EXPECT_DOUBLE_EQ(scheduledRate(c, 2.0, 0), 1.0);  // times the rate input
}

// One weight w[4] trained by mse(w, targets): the gradient is 2 (w - t) / 4. Runs `steps`
// steps, feeding each step's updated weight and state into the next, and returns w.
std::vector<double> trainSteps(const TrainingOptions& options, DType dtype, const std::vector<double>& w0,
                               const std::vector<double>& targets, int steps) {
  ImportedModel model;
  const int w = model.graph.addWeight("w", {4}, dtype);
  model.graph.markOutput(model.graph.scale("identity", w, 1.0));
  const ir::Graph graph = buildTrainingGraph(model, options);
  Feeds feeds = randomFeeds(graph, 1, 1);
  feeds["w"].floats = w0;
  feeds["targets"].floats = targets;
  const CpuExecutor executor(graph, CpuOptions{});
  for (int s = 0; s < steps; ++s) {
    const auto values = executor.run(feeds);
    for (const ir::Tensor& t : graph.tensors()) {
      if (t.alias_of >= 0 && graph.producer(t.id)->type != ir::OpType::kReshape) {
        feeds[graph.tensor(t.alias_of).name] = values[static_cast<size_t>(t.id)];
      }
    }
  }
  return {feeds["w"].floats.begin(), feeds["w"].floats.end()};
}

// The same steps in double, written from the optimizers' papers (docs/frontend.md).
std::vector<double> referenceSteps(const TrainingOptions& options, const std::vector<double>& w0,
                                   const std::vector<double>& targets, int steps) {
  const ir::OptimizerConfig& c = options.optimizer;
  std::vector<double> w(w0.begin(), w0.end()), m(4, 0.0), v(4, 0.0);
  for (int s = 0; s < steps; ++s) {
    const double lr = options.learning_rate *
                      (c.warmup_steps > 0 ? std::min(1.0, (s + 1.0) / static_cast<double>(c.warmup_steps)) : 1.0);
    std::vector<double> g(4);
    for (size_t i = 0; i < 4; ++i) g[i] = 2.0 * (w[i] - targets[i]) / 4.0;
    const bool adamw = c.kind == OptimizerKind::kAdam && c.decoupled_weight_decay;
    if (!adamw) {
      for (size_t i = 0; i < 4; ++i) g[i] += c.weight_decay * w[i];
    }
    double wn = 0, gn = 0;
    for (size_t i = 0; i < 4; ++i) {
      wn += w[i] * w[i];
      gn += (g[i] - c.weight_decay * w[i]) * (g[i] - c.weight_decay * w[i]);
    }
    wn = std::sqrt(wn);
    gn = std::sqrt(gn);
    for (size_t i = 0; i < 4; ++i) {
      switch (c.kind) {
        case OptimizerKind::kSgd: w[i] -= lr * g[i]; break;
        case OptimizerKind::kMomentum:
          m[i] = c.beta1 * m[i] + g[i];
          w[i] -= c.nesterov ? lr * (g[i] + c.beta1 * m[i]) : lr * m[i];
          break;
        case OptimizerKind::kAdam: {
          const double t = s + 1.0;
          m[i] = c.beta1 * m[i] + (1 - c.beta1) * g[i];
          v[i] = c.beta2 * v[i] + (1 - c.beta2) * g[i] * g[i];
          const double m_hat = m[i] / (1 - std::pow(c.beta1, t));
          const double v_hat = v[i] / (1 - std::pow(c.beta2, t));
          // Kingma & Ba's epsilon-hat form: epsilon after sqrt(v), scaled by sqrt(1 - beta2^t).
          const double eps_hat = c.epsilon / std::sqrt(1 - std::pow(c.beta2, t));
          w[i] -= lr * m_hat / (std::sqrt(v_hat) + eps_hat) + (adamw ? lr * c.weight_decay * w[i] : 0.0);
          break;
        }
        case OptimizerKind::kAdagrad:
          v[i] += g[i] * g[i];
          w[i] -= lr * g[i] / (std::sqrt(v[i]) + c.epsilon);
          break;
        case OptimizerKind::kLars: {
          const double trust = c.trust_coefficient * wn / (gn + c.weight_decay * wn);
          m[i] = c.beta1 * m[i] + lr * trust * g[i];
          w[i] -= m[i];
          break;
        }
      }
    }
  }
  return w;
}

struct OptimizerCase {
  const char* name;
  OptimizerKind kind;
  bool nesterov = false;
  double weight_decay = 0;
  bool decoupled = false;
  int64_t warmup = 0;
};

class Optimizer : public ::testing::TestWithParam<OptimizerCase> {};

TEST_P(Optimizer, MatchesTheClosedFormOverSixSteps) {
  const OptimizerCase& p = GetParam();
  TrainingOptions options;
  options.learning_rate = p.kind == OptimizerKind::kLars ? 2.0 : 0.05;
  options.loss = LossKind::kMse;
  options.optimizer.kind = p.kind;
  options.optimizer.nesterov = p.nesterov;
  options.optimizer.weight_decay = p.weight_decay;
  options.optimizer.decoupled_weight_decay = p.decoupled;
  options.optimizer.warmup_steps = p.warmup;
  options.optimizer.epsilon = 1e-6;
  const std::vector<double> w0 = {1.0, -2.0, 0.5, 3.0};
  const std::vector<double> targets = {0.0, 1.0, 0.25, -1.0};
  const std::vector<double> expected = referenceSteps(options, w0, targets, 6);
  // In f32 to float rounding; in f64 to the last bits of the same formulas in another order.
  for (const auto& [dtype, tolerance] : {std::pair{DType::kF32, 1e-5}, std::pair{DType::kF64, 1e-12}}) {
    const std::vector<double> got = trainSteps(options, dtype, w0, targets, 6);
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_NEAR(got[i], expected[i], tolerance * (1 + std::abs(expected[i])))
          << p.name << " " << dtypeName(dtype) << " w[" << i << "]";
      EXPECT_NE(got[i], w0[i]);  // it moved
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, Optimizer,
    ::testing::Values(OptimizerCase{"sgd_warmup", OptimizerKind::kSgd, false, 0, false, 4},
                      OptimizerCase{"sgd_decay", OptimizerKind::kSgd, false, 0.1},
                      OptimizerCase{"momentum", OptimizerKind::kMomentum},
                      OptimizerCase{"nesterov_warmup", OptimizerKind::kMomentum, true, 0, false, 3},
                      OptimizerCase{"adam", OptimizerKind::kAdam},
                      OptimizerCase{"adam_l2_warmup", OptimizerKind::kAdam, false, 0.1, false, 3},
                      OptimizerCase{"adamw", OptimizerKind::kAdam, false, 0.1, true},
                      OptimizerCase{"adagrad", OptimizerKind::kAdagrad}, OptimizerCase{"lars", OptimizerKind::kLars},
                      OptimizerCase{"lars_decay_warmup", OptimizerKind::kLars, false, 0.01, false, 2}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Optimizer, StateIsInPlaceAndTheStepCountsUp) {
  ImportedModel model;
  const int w = model.graph.addWeight("w", {4}, DType::kF32);
  model.graph.markOutput(model.graph.scale("identity", w, 1.0));
  TrainingOptions options;
  options.loss = LossKind::kMse;
  options.optimizer.kind = OptimizerKind::kAdam;
  const ir::Graph graph = buildTrainingGraph(model, options);
  int states = 0;
  for (const ir::Tensor& t : graph.tensors()) {
    if (t.role == TensorRole::kOptimizerState && graph.producer(t.id) == nullptr) ++states;
  }
  EXPECT_EQ(states, 3);  // w.m, w.v, step
  // Every OptimizerUpdate writes over what it updates; the step's increment comes last.
  for (const ir::Op& op : graph.ops()) {
    if (op.type != ir::OpType::kOptimizerUpdate) continue;
    EXPECT_GE(graph.tensor(op.outputs[0]).alias_of, 0) << op.name;
  }
  EXPECT_EQ(graph.ops().back().update_target, ir::UpdateTarget::kStep);
  Feeds feeds = randomFeeds(graph, 1, 3);
  feeds["step"].ints = {41};
  const auto values = CpuExecutor(graph, CpuOptions{}).run(feeds);
  EXPECT_EQ(values[static_cast<size_t>(tensorNamed(graph, "step:updated"))].ints[0], 42);
}

// The MLP of onnx_builder.hpp at the micro-batch size, trained on a 16-row batch.
ir::Graph mlpStep(int64_t micro_batches, Remat remat) {
  auto builder = testing::OnnxBuilder::mlp();
  const ImportedModel model = importOnnxModel(builder.model(), OnnxImportOptions{16 / micro_batches});
  TrainingOptions options;
  options.learning_rate = 0.1;
  options.micro_batches = micro_batches;
  options.rematerialize = remat;
  return buildTrainingGraph(model, options);
}

TEST(MicroBatches, FourMicroBatchesGiveTheFullBatchGradient) {
  const ir::Graph one = mlpStep(1, Remat::kNone);
  const ir::Graph four = mlpStep(4, Remat::kNone);
  // The same step inputs: x [16, 16] and labels [16].
  EXPECT_EQ(four.tensor(tensorNamed(four, "x")).shape, (ir::Shape{16, 16}));
  EXPECT_EQ(four.tensor(tensorNamed(four, "labels")).shape, (ir::Shape{16}));
  int matmuls_one = 0, matmuls_four = 0, updates = 0;
  for (const ir::Op& op : one.ops()) matmuls_one += op.type == ir::OpType::kMatMul;
  for (const ir::Op& op : four.ops()) {
    matmuls_four += op.type == ir::OpType::kMatMul;
    updates += op.type == ir::OpType::kSgdUpdate;
  }
  EXPECT_EQ(matmuls_four, 4 * matmuls_one);  // forward and backward per micro-batch
  EXPECT_EQ(updates, 4);                     // one update per weight
  const Feeds feeds = randomFeeds(one, 4, 21);
  EXPECT_NEAR(lossOf(four, feeds), lossOf(one, feeds), 1e-6 * std::abs(lossOf(one, feeds)));
  const auto g1 = gradients(one, feeds, 0.1);
  const auto g4 = gradients(four, feeds, 0.1);
  ASSERT_EQ(g1.size(), 4u);
  for (const auto& [weight, grad] : g1) {
    for (size_t i = 0; i < grad.size(); ++i) {
      // fp32 rounding of the sums, and of w - 0.1 g divided back by 0.1.
      EXPECT_NEAR(g4.at(weight)[i], grad[i], 2e-5 + 1e-4 * std::abs(grad[i])) << weight << "[" << i << "]";
    }
  }
}

TEST(Remat, GradientsAreBitIdenticalAndBackwardReadsOnlyLayerCheckpoints) {
  for (const int64_t k : {1, 2}) {
    const ir::Graph kept = mlpStep(k, Remat::kNone);
    const ir::Graph remat = mlpStep(k, Remat::kAll);
    const Feeds feeds = randomFeeds(kept, 4, 8);
    const auto a = CpuExecutor(kept, CpuOptions{}).run(feeds);
    const auto b = CpuExecutor(remat, CpuOptions{}).run(feeds);
    for (const std::string weight : {"w1", "b1", "w2", "b2"}) {
      EXPECT_EQ(a[static_cast<size_t>(tensorNamed(kept, weight + ":updated"))].floats,
                b[static_cast<size_t>(tensorNamed(remat, weight + ":updated"))].floats)
          << weight;
    }
    // The forward ops come first, as in `kept` up to its first gradient op. Of their
    // outputs, the later ops read the checkpoint between the two layers (the ReLU's a1,
    // which the second Gemm and the ReLU's gradient read), the model's output (the logits)
    // and the micro-batches' labels (those of the first micro-batch are sliced before the
    // first layer), never the first Gemm's h1, which no gradient needs.
    size_t forward = 0;
    while (kept.tensor(kept.ops()[forward].outputs[0]).role != TensorRole::kGradient) ++forward;
    std::set<int> activations;
    for (size_t i = 0; i < forward; ++i) activations.insert(remat.ops()[i].outputs[0]);
    std::set<std::string> read_later;
    std::set<std::string> recomputed;  // the forward ops copied
    for (size_t i = forward; i < remat.ops().size(); ++i) {
      const ir::Op& op = remat.ops()[i];
      if (isRecomputation(op.name)) recomputed.insert(op.name);
      if (remat.tensor(op.outputs[0]).role == TensorRole::kLoss) continue;
      for (int input : op.inputs) {
        if (activations.count(input)) read_later.insert(remat.tensor(input).name.substr(0, 2));
      }
    }
    EXPECT_EQ(read_later, (k == 1 ? std::set<std::string>{"a1", "lo"} : std::set<std::string>{"a1", "la"}));
    // Only forward ops may be copied, never h1's: what the gradients read is all checkpointed.
    EXPECT_FALSE(recomputed.count(k == 1 ? "h1_node.remat" : "h1_node.mb0.remat"));
    for (const std::string& name : recomputed) {
      EXPECT_TRUE(name.find("grad") == std::string::npos && name.find("a1") == std::string::npos) << name;
    }
  }
}

TEST(TrainingOptionsCheck, BadValuesAreConfigErrors) {
  auto expectConfigError = [](const TrainingOptions& options, const std::string& needle) {
    try {
      validateTrainingOptions(options);
      FAIL() << "expected an error about " << needle;
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::kInvalidConfig);
      EXPECT_NE(std::string(error.what()).find(needle), std::string::npos) << error.what();
    }
  };
  TrainingOptions o;
  o.learning_rate = 0;
  expectConfigError(o, "learning rate");
  o = {};
  o.optimizer.warmup_steps = -1;
  expectConfigError(o, "warmup");
  o = {};
  o.optimizer.beta1 = 1.0;
  expectConfigError(o, "beta1");
  o = {};
  o.optimizer.beta2 = -0.1;
  expectConfigError(o, "beta2");
  o = {};
  o.micro_batches = 0;
  expectConfigError(o, "micro-batches");
  EXPECT_THROW(parseOptimizer("rmsprop"), Error);
  EXPECT_THROW(parseLoss("hinge"), Error);
  EXPECT_THROW(parseRemat("some"), Error);
  EXPECT_EQ(parseOptimizer("lars"), OptimizerKind::kLars);
}

}  // namespace
}  // namespace tpusim::reference
