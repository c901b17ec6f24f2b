// The Graph builders of training: the MSE loss, the NllLoss gradient, the
// optimizer updates, and cloneOp (which replays an op on other operands, for
// micro-batching and rematerialization).
#include <algorithm>

#include "frontend/ir/graph.hpp"
#include "frontend/ir/graph_builders.hpp"
#include "sim/common/error.hpp"

namespace tpusim::ir {

using builder_detail::isFloat;
using builder_detail::makeOp;
using builder_detail::shapeError;

const char* optimizerKindName(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd: return "sgd";
    case OptimizerKind::kMomentum: return "momentum";
    case OptimizerKind::kAdam: return "adam";
    case OptimizerKind::kAdagrad: return "adagrad";
    case OptimizerKind::kLars: return "lars";
  }
  return "?";
}

namespace {
bool coupledDecay(const OptimizerConfig& c) {
  return c.weight_decay != 0 && !(c.kind == OptimizerKind::kAdam && c.decoupled_weight_decay);
}
}  // namespace

bool updateReadsParameter(const Op& op) {
  return op.update_target == UpdateTarget::kParameter || coupledDecay(op.optimizer);
}

int Graph::mseLoss(const std::string& name, int x, int targets) {
  const Tensor& tx = checked(x, name);
  const Tensor& tt = checked(targets, name);
  if (!isFloat(tx.dtype) || tt.dtype != tx.dtype || tt.shape != tx.shape) {
    shapeError(name, "mean squared error needs float predictions and targets of one shape and dtype, got " +
                         std::string(dtypeName(tx.dtype)) + shapeToString(tx.shape) + " and " + dtypeName(tt.dtype) +
                         shapeToString(tt.shape));
  }
  Op op = makeOp(name, OpType::kMseLoss, {x, targets});
  return append(std::move(op), name + ":loss", {}, tx.dtype, TensorRole::kLoss);
}

int Graph::mseLossGrad(const std::string& name, int x, int targets) {
  const Tensor& tx = checked(x, name);
  checked(targets, name);
  Op op = makeOp(name, OpType::kMseLossGrad, {x, targets});
  return append(std::move(op), name + ":out", tx.shape, tx.dtype, TensorRole::kGradient);
}

int Graph::nllLossGrad(const std::string& name, const Op& loss) {
  if (loss.type != OpType::kNllLoss) shapeError(name, "NllLossGrad needs an NllLoss");
  if (loss.reduction == Reduction::kNone) {
    throw Error(ErrorKind::kUnsupported, "op '" + loss.name +
                                             "': training needs a scalar loss; NegativeLogLikelihoodLoss with "
                                             "reduction 'none' has no gradient here (use sum or mean)");
  }
  const Tensor& tp = checked(loss.inputs[0], name);
  Op op = makeOp(name, OpType::kNllLossGrad, loss.inputs);
  op.reduction = loss.reduction;
  op.ignore_index = loss.ignore_index;
  return append(std::move(op), name + ":out", tp.shape, tp.dtype, TensorRole::kGradient);
}

int Graph::optimizerUpdate(const std::string& name, const OptimizerConfig& config, UpdateTarget target, int parameter,
                           int gradient, int step, int rate, const std::vector<int>& extra) {
  const Tensor& tp = checked(parameter, name);
  if (target == UpdateTarget::kStep) {
    if (tp.dtype != DType::kInt64 || !tp.shape.empty()) shapeError(name, "the step counter must be an int64 scalar");
    Op op = makeOp(name, OpType::kOptimizerUpdate, {parameter});
    op.optimizer = config;
    op.update_target = target;
    const int out = append(std::move(op), tp.name + ":updated", {}, DType::kInt64, TensorRole::kOptimizerState);
    m_tensors[static_cast<size_t>(out)].alias_of = parameter;
    return out;
  }
  const Tensor& tg = checked(gradient, name);
  const Tensor& ts = checked(step, name);
  if (!isFloat(tp.dtype) || tg.dtype != tp.dtype || tg.shape != tp.shape) {
    shapeError(name, "the gradient " + std::string(dtypeName(tg.dtype)) + shapeToString(tg.shape) +
                         " does not match the parameter " + dtypeName(tp.dtype) + shapeToString(tp.shape));
  }
  if (ts.dtype != DType::kInt64 || !ts.shape.empty()) shapeError(name, "the step counter must be an int64 scalar");
  const bool state_update = target != UpdateTarget::kParameter;
  std::vector<int> inputs =
      state_update ? std::vector<int>{gradient, step} : std::vector<int>{parameter, gradient, step};
  if (rate >= 0) {
    const Tensor& tr = checked(rate, name);
    if (!isFloat(tr.dtype) || elementCount(tr.shape) != 1) shapeError(name, "the rate must be a float scalar");
    inputs.push_back(rate);
  }
  size_t states = 0;  // how many of `extra` are parameter-shaped states
  size_t scalars = 0;
  const OptimizerKind kind = config.kind;
  switch (target) {
    case UpdateTarget::kParameter:
      states = kind == OptimizerKind::kSgd ? 0 : kind == OptimizerKind::kAdam ? 2 : 1;
      break;
    case UpdateTarget::kFirstState:
      if (kind == OptimizerKind::kSgd) shapeError(name, "SGD keeps no state");
      states = 1;
      scalars = kind == OptimizerKind::kLars ? 2 : 0;
      break;
    case UpdateTarget::kSecondState:
      if (kind != OptimizerKind::kAdam) shapeError(name, "only Adam keeps a second state");
      states = 1;
      break;
    case UpdateTarget::kStep: break;
  }
  if (extra.size() != states + scalars) {
    shapeError(name, std::string(optimizerKindName(kind)) + " update takes " + std::to_string(states + scalars) +
                         " state operands, got " + std::to_string(extra.size()));
  }
  for (size_t i = 0; i < extra.size(); ++i) {
    const Tensor& te = checked(extra[i], name);
    const bool ok = i < states ? te.shape == tp.shape && te.dtype == tp.dtype : te.shape.empty() && isFloat(te.dtype);
    if (!ok) {
      shapeError(name, "operand '" + te.name + "' is " + dtypeName(te.dtype) + shapeToString(te.shape) +
                           (i < states ? ", not the parameter's shape and dtype" : ", not a float scalar"));
    }
    inputs.push_back(extra[i]);
    if (state_update && i == 0 && coupledDecay(config)) inputs.push_back(parameter);  // for the L2 term
  }
  Op op = makeOp(name, OpType::kOptimizerUpdate, inputs);
  op.optimizer = config;
  op.update_target = target;
  op.has_rate_input = rate >= 0;
  const int written = target == UpdateTarget::kParameter ? parameter : extra[0];
  const Tensor& tw = m_tensors[static_cast<size_t>(written)];
  const std::string out_name = tw.name + ":updated";
  const int out = append(std::move(op), out_name, tw.shape, tw.dtype, tw.role);
  m_tensors[static_cast<size_t>(out)].alias_of = written;
  return out;
}

int Graph::cloneOp(const Graph& source, const Op& op, const std::vector<int>& inputs, const std::string& name) {
  if (inputs.size() != op.inputs.size()) shapeError(name, "cloneOp needs one replacement per input");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const DType from = source.checked(op.inputs[i], name).dtype;
    const DType to = checked(inputs[i], name).dtype;
    if (from != to) {
      shapeError(name, "cloneOp operand " + std::to_string(i) + " is " + dtypeName(to) + ", the op was built for " +
                           dtypeName(from));
    }
  }
  return cloneOpAs(source, op, inputs, name, source.checked(op.outputs[0], name).dtype);
}

int Graph::cloneOpAs(const Graph& source, const Op& op, const std::vector<int>& inputs, const std::string& name,
                     DType dtype) {
  if (inputs.size() != op.inputs.size()) shapeError(name, "cloneOp needs one replacement per input");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor from = source.checked(op.inputs[i], name);  // copies: `source` may be this graph
    const Tensor to = checked(inputs[i], name);
    const bool dtype_ok = from.dtype == to.dtype || (isFloat(from.dtype) && isFloat(to.dtype));
    if (from.shape != to.shape || !dtype_ok) {
      shapeError(name, "cloneOp operand " + std::to_string(i) + " is " + dtypeName(to.dtype) + shapeToString(to.shape) +
                           ", the op was built for " + dtypeName(from.dtype) + shapeToString(from.shape));
    }
  }
  const Tensor out = source.checked(op.outputs[0], name);  // a copy: append() grows m_tensors
  Op copy = op;
  copy.name = name;
  copy.inputs = inputs;
  const int id = append(std::move(copy), name + ":out", out.shape, dtype, out.role);
  m_ops.back().phase = op.phase;
  if (out.alias_of >= 0) {
    const auto at = std::find(op.inputs.begin(), op.inputs.end(), out.alias_of);
    if (at == op.inputs.end()) shapeError(name, "cloneOp of an op whose output aliases a tensor it does not read");
    m_tensors[static_cast<size_t>(id)].alias_of = inputs[static_cast<size_t>(at - op.inputs.begin())];
  }
  return id;
}

}  // namespace tpusim::ir
