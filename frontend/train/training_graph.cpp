#include "frontend/train/training_graph.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "frontend/ir/tensor_value.hpp"
#include "frontend/passes/pipeline_stages.hpp"
#include "frontend/train/graph_transforms.hpp"
#include "frontend/train/loss_scaling.hpp"
#include "frontend/train/optimizer.hpp"
#include "sim/common/error.hpp"

namespace tpusim {

namespace {

using ir::Graph;
using ir::Op;
using ir::OpType;
using ir::TensorRole;

// Appends the gradient contributions of one forward op, given the gradient of its output.
class Backward {
 public:
  explicit Backward(Graph& graph) : m_graph(graph), m_needs_grad(graph.tensors().size(), false) {
    for (const ir::Tensor& tensor : graph.tensors()) {
      if (tensor.role == TensorRole::kWeight) m_needs_grad[static_cast<size_t>(tensor.id)] = true;
    }
    for (const Op& op : graph.ops()) {
      bool any = false;
      for (int input : op.inputs) any = any || m_needs_grad[static_cast<size_t>(input)];
      for (int output : op.outputs) m_needs_grad[static_cast<size_t>(output)] = any;
    }
  }

  // `seed_scale` >= 0: a scalar the loss's gradient is multiplied by (the loss scale).
  void run(int loss, int seed_scale = -1) {
    const Op* loss_op = m_graph.producer(loss);
    const OpType type = loss_op ? loss_op->type : OpType::kAdd;
    const bool scalar_nll = type == OpType::kNllLoss && loss_op->reduction != ir::Reduction::kNone;
    if (type != OpType::kSoftmaxCrossEntropy && type != OpType::kMseLoss && !scalar_nll) {
      throw Error(ErrorKind::kUnsupported,
                  "training differentiates softmax cross-entropy, mean squared error and a sum or mean "
                  "NegativeLogLikelihoodLoss; the model's loss '" +
                      m_graph.tensor(loss).name + "' (" + (loss_op ? ir::opTypeName(loss_op->type) : "an input") +
                      ") has no gradient yet");
    }
    m_graph.setPhase(ir::Phase::kBackward);
    const std::vector<Op> forward = m_graph.ops();  // copy: the loop appends ops
    for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
      const Op& op = *it;
      if (op.outputs[0] == loss) {  // the seed: dloss = 1
        const int scores = op.inputs[0];
        int seed = -1;
        if (type == OpType::kSoftmaxCrossEntropy) {
          seed = m_graph.softmaxCrossEntropyGrad(op.name + ".grad", scores, op.inputs[1]);
        } else if (type == OpType::kMseLoss) {
          seed = m_graph.mseLossGrad(op.name + ".grad", scores, op.inputs[1]);
        } else {
          seed = m_graph.nllLossGrad(op.name + ".grad", op);
        }
        if (seed_scale >= 0) {
          seed = m_graph.binary(OpType::kMul, op.name + ".grad_scaled", seed, seed_scale, TensorRole::kGradient);
        }
        accumulate(scores, seed);
        continue;
      }
      settleSlices(op.outputs[0]);
      auto grad = m_grads.find(op.outputs[0]);
      if (grad == m_grads.end()) continue;
      differentiate(op, grad->second);
    }
    while (!m_slices.empty()) settleSlices(m_slices.begin()->first);  // weights and inputs: no producer
  }

  const std::map<int, int>& grads() const { return m_grads; }

 private:
  bool needs(int tensor) const { return m_needs_grad[static_cast<size_t>(tensor)]; }

  void accumulate(int tensor, int gradient) {
    auto [it, inserted] = m_grads.emplace(tensor, gradient);
    if (!inserted) {
      it->second = m_graph.add(m_graph.tensor(tensor).name + ".grad_sum" + std::to_string(m_sums++), it->second,
                               gradient, TensorRole::kGradient);
    }
  }

  // A unit-step Slice along one axis (or a whole copy): the one axis. Such slices' gradients wait
  // in m_slices until their input's gradient is needed, then join (settleSlices).
  static std::optional<int64_t> singleAxis(const Op& op, const ir::Shape& in, const ir::Shape& out) {
    std::optional<int64_t> axis;
    for (size_t d = 0; d < in.size(); ++d) {
      if (op.steps[d] != 1) return std::nullopt;
      if (in[d] == out[d] && op.starts[d] == 0) continue;
      if (axis) return std::nullopt;
      axis = static_cast<int64_t>(d);
    }
    return axis.value_or(0);
  }

  // The gradient of a tensor read by unit-step slices along one axis: each contiguous run of
  // them (an unrolled loop's steps, a Split's parts) is one Concat of their gradients, placed by
  // one SliceGrad unless it covers the axis, as XLA's backward of a loop of dynamic slices
  // updates one buffer in place; not a zero-filled copy of the input per slice, which an
  // unrolled recurrence would make quadratic in its length.
  void settleSlices(int tensor) {
    const auto found = m_slices.find(tensor);
    if (found == m_slices.end()) return;
    std::vector<SlicePiece> pieces = std::move(found->second);
    m_slices.erase(found);
    std::stable_sort(pieces.begin(), pieces.end(), [](const SlicePiece& a, const SlicePiece& b) {
      return std::tie(a.axis, a.start) < std::tie(b.axis, b.start);
    });
    const ir::Shape shape = m_graph.tensor(tensor).shape;
    const std::string base = m_graph.tensor(tensor).name + ".grad_slices";
    for (size_t first = 0; first < pieces.size();) {
      size_t end = first + 1;
      while (end < pieces.size() && pieces[end].axis == pieces[first].axis &&
             pieces[end].start == pieces[end - 1].start + pieces[end - 1].length) {
        ++end;
      }
      const int64_t axis = pieces[first].axis, start = pieces[first].start;
      const int64_t length = pieces[end - 1].start + pieces[end - 1].length - start;
      std::vector<int> parts;
      for (size_t i = first; i < end; ++i) parts.push_back(pieces[i].dy);
      const std::string name = base + std::to_string(m_sums++);
      const int joined =
          parts.size() == 1 ? parts[0] : m_graph.concat(name + ".joined", parts, axis, TensorRole::kGradient);
      if (start == 0 && length == shape[static_cast<size_t>(axis)]) {
        accumulate(tensor, joined);
      } else {
        Op placement;
        placement.starts.assign(shape.size(), 0);
        placement.starts[static_cast<size_t>(axis)] = start;
        placement.steps.assign(shape.size(), 1);
        accumulate(tensor, m_graph.sliceGrad(name, joined, placement, shape));
      }
      first = end;
    }
  }

  // `gradient` has the broadcast shape of an op's output; sum it down to `operand`'s shape.
  int toShapeOf(int gradient, int operand, const std::string& name) {
    const ir::Shape& shape = m_graph.tensor(operand).shape;
    if (m_graph.tensor(gradient).shape == shape) return gradient;
    return m_graph.reduceSumTo(name, gradient, shape);
  }

  void differentiate(const Op& op, int dy) {
    const std::string base = op.name + ".grad";
    const int a = op.inputs[0];
    const int b = op.inputs.size() > 1 ? op.inputs[1] : -1;
    const auto grad = TensorRole::kGradient;
    switch (op.type) {
      case OpType::kMatMul: {
        const bool ta = op.transpose_a;
        const bool tb = op.transpose_b;
        // y = op(a) op(b). da = dy op(b)^T, db = op(a)^T dy, each laid out like a resp. b; with batch
        // dimensions these are batched products, summed back over any batch dimension an operand broadcast.
        if (needs(a)) {
          const int da = ta ? m_graph.matmul(base + "_a", b, dy, tb, true, grad)
                            : m_graph.matmul(base + "_a", dy, b, false, !tb, grad);
          accumulate(a, toShapeOf(da, a, base + "_a.sum"));
        }
        const ir::Shape& a_shape = m_graph.tensor(a).shape;
        if (needs(b) && !ta && m_graph.tensor(b).shape.size() == 2 && a_shape.size() > 2) {
          // An unbatched rhs under a batched lhs: db sums over the batch, so fold the batch into the
          // rows, db = a[B*M, K]^T dy[B*M, N], instead of a product per batch element summed after.
          const int64_t k = a_shape.back();
          const int64_t n = m_graph.tensor(dy).shape.back();
          const int rows_a = m_graph.reshape(base + "_b.rows_a", a, {ir::elementCount(a_shape) / k, k}, grad);
          const int rows_dy =
              m_graph.reshape(base + "_b.rows_dy", dy, {ir::elementCount(m_graph.tensor(dy).shape) / n, n}, grad);
          accumulate(b, tb ? m_graph.matmul(base + "_b", rows_dy, rows_a, true, false, grad)
                           : m_graph.matmul(base + "_b", rows_a, rows_dy, true, false, grad));
        } else if (needs(b)) {
          const int db = tb ? m_graph.matmul(base + "_b", dy, a, true, ta, grad)
                            : m_graph.matmul(base + "_b", a, dy, !ta, false, grad);
          accumulate(b, toShapeOf(db, b, base + "_b.sum"));
        }
        break;
      }
      case OpType::kAdd:
        if (needs(a)) accumulate(a, toShapeOf(dy, a, base + "_a"));
        if (needs(b)) accumulate(b, toShapeOf(dy, b, base + "_b"));
        break;
      case OpType::kSub:
        if (needs(a)) accumulate(a, toShapeOf(dy, a, base + "_a"));
        if (needs(b)) accumulate(b, toShapeOf(m_graph.scale(base + "_b.neg", dy, -1.0, grad), b, base + "_b"));
        break;
      case OpType::kMul:
        if (needs(a))
          accumulate(a, toShapeOf(m_graph.binary(OpType::kMul, base + "_a.mul", dy, b, grad), a, base + "_a"));
        if (needs(b))
          accumulate(b, toShapeOf(m_graph.binary(OpType::kMul, base + "_b.mul", dy, a, grad), b, base + "_b"));
        break;
      case OpType::kDiv:
        // y = a / b: da = dy / b, db = -dy y / b.
        if (needs(a))
          accumulate(a, toShapeOf(m_graph.binary(OpType::kDiv, base + "_a.div", dy, b, grad), a, base + "_a"));
        if (needs(b)) {
          const int dy_y = m_graph.binary(OpType::kMul, base + "_b.mul", dy, op.outputs[0], grad);
          const int quotient = m_graph.binary(OpType::kDiv, base + "_b.div", dy_y, b, grad);
          accumulate(b, toShapeOf(m_graph.scale(base + "_b.neg", quotient, -1.0, grad), b, base + "_b"));
        }
        break;
      case OpType::kMaximum:
      case OpType::kMinimum: {
        // dy goes to the chosen side; a tie chooses a (max: a >= b, min: a <= b).
        const ir::CompareDirection chooses_a =
            op.type == OpType::kMaximum ? ir::CompareDirection::kGe : ir::CompareDirection::kLe;
        const int mask = m_graph.compare(chooses_a, base + ".mask", a, b, grad);
        const int zeros = m_graph.scale(base + ".zeros", dy, 0.0, grad);
        if (needs(a)) accumulate(a, toShapeOf(m_graph.where(base + "_a", mask, dy, zeros, grad), a, base + "_a.sum"));
        if (needs(b)) accumulate(b, toShapeOf(m_graph.where(base + "_b", mask, zeros, dy, grad), b, base + "_b.sum"));
        break;
      }
      case OpType::kCompare: break;  // a bool result: no gradient flows through it
      case OpType::kAllReduce:
        // One replica: the identity. (With more, the gradient of a sum would be an all-reduce of dy.)
        if (needs(a)) accumulate(a, dy);
        break;
      case OpType::kScale:
        if (needs(a)) accumulate(a, m_graph.scale(base, dy, op.scalar, grad));
        break;
      case OpType::kReshape:
        if (needs(a)) accumulate(a, m_graph.reshape(base, dy, m_graph.tensor(a).shape, grad));
        break;
      case OpType::kRelu:
        // relu(x) > 0 exactly where x > 0: reading the output, the step keeps only it (as
        // frameworks do) and the pre-activation stays inside its fused group.
        if (needs(a)) accumulate(a, m_graph.reluGrad(base, dy, op.outputs[0]));
        break;
      case OpType::kUnary:
        if (needs(a)) accumulate(a, m_graph.unaryGrad(op.unary, base, dy, a, op.outputs[0], op.alpha, op.gamma));
        break;
      case OpType::kTranspose: {
        if (!needs(a)) break;
        std::vector<int64_t> inverse(op.perm.size());
        for (size_t i = 0; i < op.perm.size(); ++i) inverse[static_cast<size_t>(op.perm[i])] = static_cast<int64_t>(i);
        accumulate(a, m_graph.transpose(base, dy, inverse, grad));
        break;
      }
      case OpType::kReduce: {
        if (!needs(a)) break;
        const ir::Shape x_shape = m_graph.tensor(a).shape;  // a copy: the graph grows below
        ir::Shape kept = x_shape;
        for (int64_t axis : op.perm) kept[static_cast<size_t>(axis)] = 1;
        int g = m_graph.reshape(base + ".kept", dy, kept, grad);
        if (op.reduction == ir::Reduction::kMax || op.reduction == ir::Reduction::kMin) {
          // dy goes to the elements equal to the result; tied elements each get all of it.
          const int result = m_graph.reshape(base + ".result", op.outputs[0], kept, grad);
          const int mask = m_graph.compare(ir::CompareDirection::kEq, base + ".mask", a, result, grad);
          const int zeros = m_graph.scale(base + ".zeros", g, 0.0, grad);
          accumulate(a, m_graph.where(base, mask, g, zeros, grad));
          break;
        }
        if (op.reduction == ir::Reduction::kMean) {
          g = m_graph.scale(
              base + ".mean", g,
              1.0 / static_cast<double>(ir::elementCount(x_shape) / std::max<int64_t>(1, ir::elementCount(kept))),
              grad);
        }
        accumulate(a, m_graph.broadcastTo(base, g, x_shape, grad));
        break;
      }
      case OpType::kBroadcastTo:
        if (needs(a)) accumulate(a, toShapeOf(dy, a, base));
        break;
      case OpType::kSlice: {
        if (!needs(a)) break;
        const ir::Shape& out = m_graph.tensor(op.outputs[0]).shape;
        if (const auto axis = singleAxis(op, m_graph.tensor(a).shape, out)) {
          const auto d = static_cast<size_t>(*axis);
          m_slices[a].push_back({*axis, op.starts[d], out[d], dy});
        } else {
          accumulate(a, m_graph.sliceGrad(base, dy, op, m_graph.tensor(a).shape));
        }
        break;
      }
      case OpType::kConcat: {
        int64_t start = 0;
        for (size_t i = 0; i < op.inputs.size(); ++i) {
          const int part = op.inputs[i];
          const int64_t len = m_graph.tensor(part).shape[static_cast<size_t>(op.axis)];
          if (needs(part)) accumulate(part, m_graph.slice(base + std::to_string(i), dy, op.axis, start, len, grad));
          start += len;
        }
        break;
      }
      case OpType::kGather:
        if (needs(a)) accumulate(a, m_graph.gatherGrad(base, dy, b, m_graph.tensor(a).shape, op.axis));
        break;
      case OpType::kGatherGrad:  // a scatter-add: each element of dy's operand reads back its place
        if (needs(a)) accumulate(a, m_graph.gather(base, dy, b, op.axis));
        break;
      case OpType::kPool:
        if (needs(a)) accumulate(a, m_graph.poolGrad(base, dy, a, op.pool));
        break;
      case OpType::kPow:
        if (needs(a)) accumulate(a, toShapeOf(m_graph.powGrad(base + "_a", dy, op, false), a, base + "_a.sum"));
        if (needs(b)) accumulate(b, toShapeOf(m_graph.powGrad(base + "_b", dy, op, true), b, base + "_b.sum"));
        break;
      case OpType::kWhere: {
        // dx = c ? dy : 0 and dy_branch = c ? 0 : dy, each summed to its operand's shape.
        const int x = op.inputs[1];
        const int y = op.inputs[2];
        const int zeros = m_graph.scale(base + ".zeros", dy, 0.0, grad);
        if (needs(x)) accumulate(x, toShapeOf(m_graph.where(base + "_x", a, dy, zeros, grad), x, base + "_x.sum"));
        if (needs(y)) accumulate(y, toShapeOf(m_graph.where(base + "_y", a, zeros, dy, grad), y, base + "_y.sum"));
        break;
      }
      case OpType::kSoftmax:
      case OpType::kLogSoftmax: {
        // Softmax y: dx = y (dy - sum(dy y)); log-softmax y: dx = dy - exp(y) sum(dy); sums along the axis, kept.
        if (!needs(a)) break;
        const int y = op.outputs[0];
        const bool log = op.type == OpType::kLogSoftmax;
        const int p = log ? m_graph.unary(ir::UnaryKind::kExp, base + ".exp", y, grad) : y;
        const int weighted = log ? dy : m_graph.binary(OpType::kMul, base + ".dy_y", dy, y, grad);
        const int sum = m_graph.reduce(base + ".sum", weighted, ir::Reduction::kSum, {op.axis}, true);
        if (log) {
          accumulate(a, m_graph.binary(OpType::kSub, base, dy,
                                       m_graph.binary(OpType::kMul, base + ".p_sum", p, sum, grad), grad));
        } else {
          accumulate(a, m_graph.binary(OpType::kMul, base, y,
                                       m_graph.binary(OpType::kSub, base + ".centered", dy, sum, grad), grad));
        }
        break;
      }
      case OpType::kCast: {  // between float types the gradient is dy converted back; integers have none
        const DType from = m_graph.tensor(a).dtype;
        const DType to = m_graph.tensor(op.outputs[0]).dtype;
        if (!needs(a) || !ir::TensorValue::isFloating(from) || !ir::TensorValue::isFloating(to)) break;
        accumulate(a, from == to ? dy : m_graph.cast(base, dy, from, grad));
        break;
      }
      case OpType::kConv:
        if (needs(a)) accumulate(a, m_graph.convGradInput(base + "_x", dy, b, m_graph.tensor(a).shape, op.conv));
        if (needs(b)) accumulate(b, m_graph.convGradWeight(base + "_w", a, dy, m_graph.tensor(b).shape, op.conv));
        break;
      case OpType::kConvGradInput:  // a ConvTranspose: the adjoint of the Conv it transposes
        if (needs(a)) accumulate(a, m_graph.conv(base + "_x", dy, b, op.conv));
        if (needs(b)) accumulate(b, m_graph.convGradWeight(base + "_w", dy, a, m_graph.tensor(b).shape, op.conv));
        break;
      default: throw Error(ErrorKind::kUnsupported, "op '" + op.name + "': no gradient for " + ir::opTypeName(op.type));
    }
  }

  Graph& m_graph;
  std::vector<bool> m_needs_grad;
  std::map<int, int> m_grads;  // tensor -> its gradient
  struct SlicePiece {
    int64_t axis = 0, start = 0, length = 0;
    int dy = -1;
  };
  std::map<int, std::vector<SlicePiece>> m_slices;  // tensor -> its unit-step slices' gradients, not yet joined
  int m_sums = 0;
};

// The single output a loss the graph adds is computed on.
const ir::Tensor& singleOutput(const Graph& graph, const char* loss) {
  if (graph.outputs().size() != 1) {
    throw Error(ErrorKind::kUnsupported, "training needs a loss: the model has " +
                                             std::to_string(graph.outputs().size()) + " outputs, and tpusim adds " +
                                             loss + " only to a single output");
  }
  return graph.tensor(graph.outputs()[0]);
}

int lossOf(const ImportedModel& model, Graph& graph, LossKind requested) {
  const LossKind kind = chooseLoss(model, requested).kind;
  if (kind == LossKind::kAuto) {
    for (int output : graph.outputs()) {
      if (graph.tensor(output).role == TensorRole::kLoss) return output;
    }
    throw Error(ErrorKind::kInvalidInput, "the model's loss is not a graph output");
  }
  if (kind == LossKind::kMse) {
    const ir::Tensor prediction = singleOutput(graph, "mean squared error");
    const int targets = graph.addInput("targets", prediction.shape, prediction.dtype, TensorRole::kLabel);
    return graph.mseLoss("loss", prediction.id, targets);
  }
  const ir::Tensor logits = singleOutput(graph, "softmax cross-entropy");
  const int labels = graph.addInput("labels", {logits.shape[0]}, DType::kInt64, TensorRole::kLabel);
  return graph.softmaxCrossEntropy("loss", logits.id, labels);
}

int addLossScale(Graph& graph) {
  return graph.addInput(kLossScaleTensor, {}, DType::kF32, TensorRole::kOptimizerState);
}

// The weights the loss depends on, in tensor order, with their gradients.
std::vector<std::pair<int, int>> trainedWeights(const Graph& graph, const std::map<int, int>& grads) {
  std::vector<std::pair<int, int>> updates;
  for (const ir::Tensor& tensor : graph.tensors()) {
    if (tensor.role != TensorRole::kWeight || graph.producer(tensor.id) != nullptr) continue;
    auto grad = grads.find(tensor.id);
    if (grad != grads.end()) updates.emplace_back(tensor.id, grad->second);
  }
  if (updates.empty())
    throw Error(ErrorKind::kInvalidInput, "the model has no weights that the loss depends on: nothing to train");
  return updates;
}

// Forward and backward of k micro-batches: the model's graph (at the micro-batch size)
// replayed once per slice of the full-batch inputs, each followed by its backward pass;
// the weights' gradients are summed and scaled by 1 / k, so a mean loss over the full
// batch gets the full batch's gradient. Marks the forward ops in `forward`.
// With `loss_scaling`, `loss_scale` receives the step's loss scale input.
Graph microBatched(const ImportedModel& model, const Graph& micro, int micro_loss, int64_t k, bool loss_scaling,
                   int& loss_scale, std::vector<std::pair<int, int>>& updates, std::vector<bool>& forward) {
  Graph graph;
  const int64_t rows = model.batch;
  std::map<int, int> full;  // micro graph's sources -> the step's tensors
  for (const ir::Tensor& t : micro.tensors()) {
    if (micro.producer(t.id) != nullptr) continue;
    if (t.role == TensorRole::kWeight) {
      full[t.id] = graph.addWeight(t.name, t.shape, t.dtype);
    } else if (t.role == TensorRole::kConstant) {
      full[t.id] = graph.addConstant(t.name, t.shape, t.dtype);
    } else {
      ir::Shape shape = t.shape;
      if (!shape.empty() && shape[0] == rows) shape[0] = rows * k;
      full[t.id] = graph.addInput(t.name, shape, t.dtype, t.role);
    }
  }
  if (loss_scaling) loss_scale = addLossScale(graph);
  std::map<int, int> sums;  // weight -> summed gradient
  int losses = -1;
  for (int64_t i = 0; i < k; ++i) {
    const std::string suffix = ".mb" + std::to_string(i);
    graph.setPhase(ir::Phase::kForward);
    std::map<int, int> map;
    for (const auto& [source, tensor] : full) {
      const ir::Tensor& t = graph.tensor(tensor);
      const bool sliced = t.role != TensorRole::kWeight && t.role != TensorRole::kConstant && !t.shape.empty() &&
                          t.shape != micro.tensor(source).shape;
      map[source] = sliced ? graph.slice(t.name + suffix, tensor, 0, i * rows, rows, t.role) : tensor;
    }
    for (const Op& op : micro.ops()) {
      std::vector<int> inputs;
      for (int input : op.inputs) inputs.push_back(map.at(input));
      const int out = graph.cloneOp(micro, op, inputs, op.name + suffix);
      graph.rename(out, micro.tensor(op.outputs[0]).name + suffix);
      map[op.outputs[0]] = out;
    }
    forward.resize(graph.ops().size(), true);
    Backward backward(graph);
    backward.run(map.at(micro_loss), loss_scale);
    for (const auto& [weight, grad] : trainedWeights(graph, backward.grads())) {
      auto [it, inserted] = sums.emplace(weight, grad);
      if (!inserted) {
        it->second = graph.add(graph.tensor(weight).name + ".grad_acc" + std::to_string(i), it->second, grad,
                               TensorRole::kGradient);
      }
    }
    forward.resize(graph.ops().size(), false);
    const int loss = map.at(micro_loss);
    if (losses < 0) {
      losses = loss;
    } else {  // the loss sum is forward work: rematerialization leaves it alone
      graph.setPhase(ir::Phase::kForward);
      losses = graph.add("loss.acc" + std::to_string(i), losses, loss, TensorRole::kLoss);
      forward.push_back(true);
    }
  }
  const double mean = 1.0 / static_cast<double>(k);
  graph.setPhase(ir::Phase::kBackward);
  for (const auto& [weight, grad] : sums) {
    updates.emplace_back(weight, graph.scale(graph.tensor(weight).name + ".grad_mean", grad, mean));
    graph.rename(updates.back().second, graph.tensor(weight).name + ".grad_mean");
  }
  forward.resize(graph.ops().size(), false);  // the gradient means
  graph.setPhase(ir::Phase::kForward);
  const int loss = graph.scale("loss.mean", losses, mean, TensorRole::kLoss);
  graph.rename(loss, micro.tensor(micro_loss).name);
  graph.markOutput(loss);
  forward.push_back(true);
  return graph;
}

}  // namespace

LossChoice chooseLoss(const ImportedModel& model, LossKind requested) {
  if (model.has_loss) {
    if (requested != LossKind::kAuto) {
      throw Error(ErrorKind::kInvalidConfig,
                  "the model computes its own loss; a loss option other than auto applies to models without one");
    }
    return {LossKind::kAuto, "the model's own"};
  }
  const Graph& graph = model.graph;
  const bool classes = graph.outputs().size() == 1 && graph.tensor(graph.outputs()[0]).shape.size() == 2 &&
                       isFloatingDType(graph.tensor(graph.outputs()[0]).dtype);
  const auto shapeOfOutput = [&](const char* loss) {
    const ir::Tensor& output = singleOutput(graph, loss);
    return "'" + output.name + "' is " + ir::shapeToString(output.shape);
  };
  switch (requested) {
    case LossKind::kMse: return {LossKind::kMse, "mean squared error"};
    case LossKind::kSoftmaxCrossEntropy:
      if (!classes) {
        throw Error(ErrorKind::kInvalidConfig, "--loss softmax_cross_entropy needs a [batch, classes] float output; " +
                                                   shapeOfOutput("softmax cross-entropy") +
                                                   " (--loss mse, or auto, trains it against targets of its shape)");
      }
      return {LossKind::kSoftmaxCrossEntropy, "softmax cross-entropy"};
    case LossKind::kAuto: break;
  }
  if (classes) {
    return {LossKind::kSoftmaxCrossEntropy,
            "softmax cross-entropy (--loss auto: " + shapeOfOutput("a loss") + ", [batch, classes])"};
  }
  return {LossKind::kMse, "mean squared error (--loss auto: " + shapeOfOutput("a loss") + ", not [batch, classes])"};
}

Graph buildTrainingGraph(const ImportedModel& model, const TrainingOptions& options) {
  validateTrainingOptions(options);
  ir::OptimizerConfig optimizer = options.optimizer;
  optimizer.learning_rate = options.learning_rate;
  Graph graph = model.graph;
  const int loss = lossOf(model, graph, options.loss);
  std::vector<bool> forward;  // per op: part of the forward pass (or the loss)
  std::vector<std::pair<int, int>> updates;
  int loss_scale = -1;
  if (options.micro_batches > 1) {
    graph = microBatched(model, graph, loss, options.micro_batches, options.loss_scaling, loss_scale, updates, forward);
  } else {
    if (options.loss_scaling) loss_scale = addLossScale(graph);
    forward.assign(graph.ops().size(), true);
    Backward backward(graph);
    backward.run(loss, loss_scale);
    updates = trainedWeights(graph, backward.grads());
    if (std::find(graph.outputs().begin(), graph.outputs().end(), loss) == graph.outputs().end()) {
      graph.markOutput(loss);
    }
  }
  if (options.loss_scaling) updates = appendLossScaling(graph, updates, loss_scale);
  appendOptimizer(graph, updates, optimizer);
  if (options.rematerialize == Remat::kAll) {
    forward.resize(graph.ops().size(), false);
    graph = rematerialize(graph, forward, pipelineLayerOfOps(graph));
  }
  return graph;
}

Graph buildInferenceGraph(const ImportedModel& model) {
  if (!model.has_loss) return model.graph;
  // Replay the forward ops without the loss; the logits become outputs.
  const Graph& source = model.graph;
  Graph graph;
  std::map<int, int> map;
  for (const ir::Tensor& tensor : source.tensors()) {
    if (source.producer(tensor.id) != nullptr) continue;
    if (tensor.role == TensorRole::kLabel) continue;
    if (tensor.role == TensorRole::kWeight) {
      map[tensor.id] = graph.addWeight(tensor.name, tensor.shape, tensor.dtype);
    } else if (tensor.role == TensorRole::kConstant) {
      map[tensor.id] = graph.addConstant(tensor.name, tensor.shape, tensor.dtype);
    } else {
      map[tensor.id] = graph.addInput(tensor.name, tensor.shape, tensor.dtype, tensor.role);
    }
  }
  for (const Op& op : source.ops()) {
    auto in = [&](size_t i) { return map.at(op.inputs[i]); };
    int out = -1;
    switch (op.type) {
      case OpType::kMatMul: out = graph.matmul(op.name, in(0), in(1), op.transpose_a, op.transpose_b); break;
      case OpType::kAdd:
      case OpType::kSub:
      case OpType::kMul:
      case OpType::kDiv: out = graph.binary(op.type, op.name, in(0), in(1)); break;
      case OpType::kScale: out = graph.scale(op.name, in(0), op.scalar); break;
      case OpType::kReshape: out = graph.reshape(op.name, in(0), source.tensor(op.outputs[0]).shape); break;
      case OpType::kRelu: out = graph.relu(op.name, in(0)); break;
      case OpType::kUnary: out = graph.unary(op.unary, op.name, in(0), op.alpha, op.gamma); break;
      case OpType::kTranspose: out = graph.transpose(op.name, in(0), op.perm); break;
      case OpType::kGather: out = graph.gather(op.name, in(0), in(1), op.axis); break;
      case OpType::kSlice:
        out = graph.stridedSlice(op.name, in(0), op.starts, op.steps, source.tensor(op.outputs[0]).shape);
        break;
      case OpType::kConv: out = graph.conv(op.name, in(0), in(1), op.conv); break;
      case OpType::kConvGradInput:
        out = graph.convTranspose(op.name, in(0), in(1), source.tensor(op.outputs[0]).shape, op.conv);
        break;
      case OpType::kWhere: out = graph.where(op.name, in(0), in(1), in(2)); break;
      case OpType::kMaximum:
      case OpType::kMinimum: out = graph.binary(op.type, op.name, in(0), in(1)); break;
      case OpType::kCompare: out = graph.compare(op.compare, op.name, in(0), in(1)); break;
      case OpType::kAllReduce: out = graph.allReduce(op.name, in(0), op.reduction, op.replicas); break;
      case OpType::kPow: out = graph.pow(op.name, in(0), in(1)); break;
      case OpType::kCast: out = graph.cast(op.name, in(0), source.tensor(op.outputs[0]).dtype); break;
      case OpType::kBroadcastTo:
        out = graph.broadcastTo(op.name, in(0), source.tensor(op.outputs[0]).shape, TensorRole::kActivation);
        break;
      case OpType::kPool: out = graph.pool(op.name, in(0), op.pool); break;
      case OpType::kReduce: out = graph.reduce(op.name, in(0), op.reduction, op.perm, op.keepdims); break;
      case OpType::kConcat: {
        std::vector<int> parts;
        for (size_t i = 0; i < op.inputs.size(); ++i) parts.push_back(in(i));
        out = graph.concat(op.name, parts, op.axis);
        break;
      }
      case OpType::kSoftmax:
      case OpType::kLogSoftmax: out = graph.softmax(op.name, in(0), op.axis, op.type == OpType::kLogSoftmax); break;
      case OpType::kSoftmaxCrossEntropy:
      case OpType::kNllLoss:  // a loss: what it scores becomes the output
        if (std::find(graph.outputs().begin(), graph.outputs().end(), in(0)) == graph.outputs().end()) {
          graph.markOutput(in(0));
        }
        continue;
      default: throw Error(ErrorKind::kInternal, "unexpected op in a forward graph: " + op.name);
    }
    graph.rename(out, source.tensor(op.outputs[0]).name);
    map[op.outputs[0]] = out;
  }
  return graph;
}

}  // namespace tpusim
