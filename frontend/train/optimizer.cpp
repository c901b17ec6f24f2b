#include "frontend/train/optimizer.hpp"

#include <cmath>

#include "frontend/train/training_graph.hpp"
#include "sim/common/error.hpp"

namespace tpusim {

using ir::Graph;
using ir::OptimizerKind;
using ir::TensorRole;
using ir::UpdateTarget;

namespace {

// ||x||_2 as a float scalar: sqrt(sum(x * x)).
int norm(Graph& graph, int x, const std::string& name) {
  const int squares = graph.binary(ir::OpType::kMul, name + ".square", x, x, TensorRole::kGradient);
  const int sum = graph.reduce(name + ".sum", squares, ir::Reduction::kSum, {}, false);
  return graph.unary(ir::UnaryKind::kSqrt, name, sum, TensorRole::kGradient);
}

[[noreturn]] void bad(const std::string& message) {
  throw Error(ErrorKind::kInvalidConfig, message);
}

}  // namespace

void appendOptimizer(Graph& graph, const std::vector<std::pair<int, int>>& updates, const ir::OptimizerConfig& config) {
  graph.setPhase(ir::Phase::kUpdate);
  if (config.kind == OptimizerKind::kSgd && config.warmup_steps == 0 && config.weight_decay == 0) {
    for (const auto& [weight, grad] : updates) {
      graph.sgdUpdate(graph.tensor(weight).name + ".sgd", weight, grad, config.learning_rate);
    }
    return;
  }
  const int step = graph.addInput("step", {}, DType::kInt64, TensorRole::kOptimizerState);
  const std::string kind = ir::optimizerKindName(config.kind);
  // Plain ints, not structured bindings: the lambdas below capture them, which clang
  // before 16 rejects for bindings (the fuzz build uses Debian's clang 14).
  for (const std::pair<int, int>& entry : updates) {
    const int weight = entry.first;
    const int grad = entry.second;
    const ir::Tensor w = graph.tensor(weight);
    const std::string base = w.name + "." + kind;
    auto state = [&](const std::string& suffix) {
      return graph.addInput(w.name + "." + suffix, w.shape, w.dtype, TensorRole::kOptimizerState);
    };
    auto update = [&](UpdateTarget target, const std::string& part, const std::vector<int>& extra) {
      return graph.optimizerUpdate(base + part, config, target, weight, grad, step, -1, extra);
    };
    switch (config.kind) {
      case OptimizerKind::kSgd: update(UpdateTarget::kParameter, "", {}); break;
      case OptimizerKind::kMomentum: {
        const int v = update(UpdateTarget::kFirstState, ".velocity", {state("velocity")});
        update(UpdateTarget::kParameter, "", {v});
        break;
      }
      case OptimizerKind::kAdam: {
        const int m = update(UpdateTarget::kFirstState, ".m", {state("m")});
        const int v = update(UpdateTarget::kSecondState, ".v", {state("v")});
        update(UpdateTarget::kParameter, "", {m, v});
        break;
      }
      case OptimizerKind::kAdagrad: {
        const int h = update(UpdateTarget::kFirstState, ".h", {state("h")});
        update(UpdateTarget::kParameter, "", {h});
        break;
      }
      case OptimizerKind::kLars: {
        const int velocity = state("velocity");
        const int w_norm = norm(graph, weight, base + ".weight_norm");
        const int g_norm = norm(graph, grad, base + ".grad_norm");
        const int v = update(UpdateTarget::kFirstState, ".velocity", {velocity, w_norm, g_norm});
        update(UpdateTarget::kParameter, "", {v});
        break;
      }
    }
  }
  graph.optimizerUpdate("step.increment", config, UpdateTarget::kStep, step, -1, -1, -1, {});
}

LossKind parseLoss(const std::string& name) {
  if (name == "auto") return LossKind::kAuto;
  if (name == "softmax_cross_entropy") return LossKind::kSoftmaxCrossEntropy;
  if (name == "mse") return LossKind::kMse;
  bad("unknown loss '" + name + "' (use auto, softmax_cross_entropy or mse)");
}

ir::OptimizerKind parseOptimizer(const std::string& name) {
  for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kMomentum, OptimizerKind::kAdam,
                             OptimizerKind::kAdagrad, OptimizerKind::kLars}) {
    if (name == ir::optimizerKindName(kind)) return kind;
  }
  bad("unknown optimizer '" + name + "' (use sgd, momentum, adam, adagrad or lars)");
}

Remat parseRemat(const std::string& name) {
  if (name == "none") return Remat::kNone;
  if (name == "all") return Remat::kAll;
  bad("unknown rematerialization policy '" + name + "' (use none or all)");
}

void validateTrainingOptions(const TrainingOptions& options) {
  const ir::OptimizerConfig& c = options.optimizer;
  if (!(options.learning_rate > 0) || !std::isfinite(options.learning_rate))
    bad("learning rate must be > 0 and finite (got " + std::to_string(options.learning_rate) + ")");
  if (c.warmup_steps < 0) bad("warmup steps must be >= 0 (got " + std::to_string(c.warmup_steps) + ")");
  auto unit = [](double beta) { return beta >= 0 && beta < 1; };
  if (!unit(c.beta1)) bad("beta1 (momentum) must be in [0, 1) (got " + std::to_string(c.beta1) + ")");
  if (!unit(c.beta2)) bad("beta2 must be in [0, 1) (got " + std::to_string(c.beta2) + ")");
  if (!(c.epsilon > 0)) bad("epsilon must be > 0 (got " + std::to_string(c.epsilon) + ")");
  if (!(c.weight_decay >= 0)) bad("weight decay must be >= 0 (got " + std::to_string(c.weight_decay) + ")");
  if (!(c.trust_coefficient > 0)) bad("the LARS trust coefficient must be > 0");
  if (options.micro_batches < 1) bad("micro-batches must be >= 1 (got " + std::to_string(options.micro_batches) + ")");
}

}  // namespace tpusim
