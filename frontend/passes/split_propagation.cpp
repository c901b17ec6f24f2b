#include "frontend/passes/split_propagation.hpp"

#include <algorithm>

namespace tpusim {

namespace {

using ir::OpType;
using ir::Shape;

constexpr int kUndecided = -2;

struct Refused {
  std::string reason;
};

int rankOf(const Shape& shape) {
  return static_cast<int>(shape.size());
}

class Propagation {
 public:
  Propagation(const ir::Graph& graph, int64_t parts, const std::map<int, int>& seeds)
      : m_graph(graph), m_parts(parts), m_axis(graph.tensors().size(), kWholeTensor) {
    for (const ir::Tensor& t : graph.tensors()) {
      if (graph.producer(t.id) != nullptr) continue;
      const bool parameter = t.role == ir::TensorRole::kWeight || t.role == ir::TensorRole::kOptimizerState ||
                             t.role == ir::TensorRole::kConstant;
      if (parameter) m_axis[static_cast<size_t>(t.id)] = kUndecided;
    }
    for (const auto& [tensor, axis] : seeds) {
      checkDivisible(tensor, axis);
      m_axis[static_cast<size_t>(tensor)] = axis;
    }
  }

  SplitPlan run() {
    const std::vector<ir::Op>& ops = m_graph.ops();
    for (size_t i = 0; i < ops.size(); ++i) {
      m_op = &ops[i];
      visit(ops[i], i);
    }
    m_op = nullptr;
    for (const size_t sum : m_pending_sums) {
      if (axis(ops[sum].inputs[0]) >= 0) m_partial.push_back(sum);
    }
    std::sort(m_partial.begin(), m_partial.end());
    for (int& a : m_axis) a = a == kUndecided ? kWholeTensor : a;
    return {m_axis, m_partial};
  }
  const ir::Op* op() const { return m_op; }

 private:
  int axis(int t) const { return m_axis[static_cast<size_t>(t)]; }
  const Shape& shape(int t) const { return m_graph.tensor(t).shape; }
  const std::string& name(int t) const { return m_graph.tensor(t).name; }

  void checkDivisible(int t, int a) const {
    if (a < 0) return;
    const int64_t dim = shape(t)[static_cast<size_t>(a)];
    if (dim % m_parts != 0) {
      throw Refused{name(t) + " dimension " + std::to_string(a) + " (" + std::to_string(dim) + ") does not divide by " +
                    std::to_string(m_parts)};
    }
  }
  void set(int t, int a) {
    checkDivisible(t, a);
    m_axis[static_cast<size_t>(t)] = a;
    if (a == kUndecided) return;
    auto group = m_group_of.find(t);
    if (group == m_group_of.end()) return;
    for (const int member : m_groups[group->second]) {
      if (axis(member) == kUndecided) set(member, a);
    }
  }
  // Ties undecided tensors of one shape, so that the first decision of any is theirs all.
  void tie(const std::vector<int>& tensors) {
    const size_t into = m_groups.size();
    m_groups.emplace_back();
    for (const int t : tensors) {
      auto old = m_group_of.find(t);
      if (old == m_group_of.end()) {
        m_group_of[t] = into;
        m_groups[into].push_back(t);
        continue;
      }
      if (old->second == into) continue;
      const std::vector<int> members = std::move(m_groups[old->second]);
      for (const int member : members) {
        m_group_of[member] = into;
        m_groups[into].push_back(member);
      }
    }
  }
  // Decides an undecided operand; refuses a decided one split otherwise.
  void require(int t, int a) {
    if (axis(t) == kUndecided) return set(t, a);
    if (axis(t) != a) throw Refused{"operand " + name(t) + " is split otherwise than the op needs"};
  }
  void output(const ir::Op& op, int a) {
    for (const int out : op.outputs) set(out, a);
  }
  void wholeOnly(const ir::Op& op) {
    for (const int in : op.inputs) {
      if (axis(in) >= 0) throw Refused{"a " + std::string(ir::opTypeName(op.type)) + " cannot take a split operand"};
      if (axis(in) == kUndecided) set(in, kWholeTensor);
    }
    output(op, kWholeTensor);
  }
  // The axis of `t` that output axis `o` reads under numpy broadcasting, or -1.
  int carried(int t, int o, const Shape& out) const {
    const int i = o - (rankOf(out) - rankOf(shape(t)));
    if (o < 0 || i < 0) return -1;
    if (shape(t)[static_cast<size_t>(i)] == 1 && out[static_cast<size_t>(o)] != 1) return -1;
    return i;
  }

  // An elementwise op none of whose output-shaped operands is decided, the others scalars,
  // leaves them and its output undecided and tied: a parameter cast to a policy's compute
  // dtype (frontend/train/precision_policy.hpp), decided with the parameter by the first
  // reader of either; an optimizer state's update from a GatherGrad's gradient, decided by
  // the weight's own update beside the split weight.
  bool deferred(const ir::Op& op) {
    const int out = op.outputs[0];
    std::vector<int> tied{out};
    for (const int in : op.inputs) {
      if (shape(in) == shape(out)) {
        if (axis(in) != kUndecided) return false;
        tied.push_back(in);
      } else if (ir::elementCount(shape(in)) != 1) {
        return false;
      }
    }
    if (tied.size() == 1) return false;
    for (const int in : op.inputs) {
      if (shape(in) != shape(out) && axis(in) == kUndecided) set(in, kWholeTensor);
    }
    m_axis[static_cast<size_t>(out)] = kUndecided;
    tie(tied);
    return true;
  }

  void elementwise(const ir::Op& op) {
    if (deferred(op)) return;
    const Shape& out = shape(op.outputs[0]);
    int o = kWholeTensor;
    for (const int in : op.inputs) {
      if (axis(in) < 0) continue;
      const int mapped = axis(in) + rankOf(out) - rankOf(shape(in));
      if (o != kWholeTensor && o != mapped) throw Refused{"operands split along different axes"};
      o = mapped;
    }
    for (const int in : op.inputs) {
      const int c = carried(in, o, out);
      if (axis(in) == kUndecided) {
        set(in, c >= 0 ? c : kWholeTensor);
      } else if (axis(in) == kWholeTensor && c >= 0) {
        throw Refused{"reads the whole " + name(in) + " beside a split operand"};
      }
    }
    output(op, o);
  }

  void matmul(const ir::Op& op, size_t index) {
    const int a = op.inputs[0], b = op.inputs[1];
    const int ra = rankOf(shape(a)), rb = rankOf(shape(b)), ro = rankOf(shape(op.outputs[0]));
    const int ma = op.transpose_a ? ra - 1 : ra - 2, ka = op.transpose_a ? ra - 2 : ra - 1;
    const int kb = op.transpose_b ? rb - 1 : rb - 2, nb = op.transpose_b ? rb - 2 : rb - 1;
    const auto batch = [](int s, int r) { return s >= 0 && s < r - 2; };
    // The same batch axis of the other operand, where it carries it.
    const auto partner = [&](int other, int s, int r) {
      const int o = s + ro - r;
      const int i = o - (ro - rankOf(shape(other)));
      return i >= 0 && i < rankOf(shape(other)) - 2 && shape(other)[static_cast<size_t>(i)] != 1 ? i : kWholeTensor;
    };
    if (axis(b) == kUndecided) {
      const int sa = axis(a);
      set(b, sa == ka ? kb : batch(sa, ra) ? partner(b, sa, ra) : kWholeTensor);
    }
    if (axis(a) == kUndecided) {
      const int sb = axis(b);
      set(a, sb == kb ? ka : batch(sb, rb) ? partner(a, sb, rb) : kWholeTensor);
    }
    const int sa = axis(a), sb = axis(b);
    if ((sa == ka) != (sb == kb)) throw Refused{"contracts over a dimension split on one operand only"};
    if (sa == ka) {
      m_partial.push_back(index);
      return output(op, kWholeTensor);
    }
    int o = kWholeTensor;
    const auto take = [&](int mapped) {
      if (o != kWholeTensor && o != mapped) throw Refused{"would split its output along two axes"};
      o = mapped;
    };
    if (sa == ma) take(ro - 2);
    if (sb == nb) take(ro - 1);
    if (batch(sa, ra)) take(sa + ro - ra);
    if (batch(sb, rb)) take(sb + ro - rb);
    if (o >= 0 && o < ro - 2) {
      if (sa < 0 && partner(a, o - (ro - ra), ra) >= 0) throw Refused{"reads the whole " + name(a) + " by split heads"};
      if (sb < 0 && partner(b, o - (ro - rb), rb) >= 0) throw Refused{"reads the whole " + name(b) + " by split heads"};
    }
    output(op, o);
  }

  void reshape(const ir::Op& op) {
    const int x = op.inputs[0];
    if (axis(x) == kUndecided) set(x, kWholeTensor);
    if (axis(x) < 0) return output(op, kWholeTensor);
    const Shape& in = shape(x);
    const Shape& out = shape(op.outputs[0]);
    int64_t prefix = 1;
    for (int d = 0; d < axis(x); ++d) prefix *= in[static_cast<size_t>(d)];
    int64_t out_prefix = 1;
    for (int d = 0; d < rankOf(out); ++d) {
      const int64_t dim = out[static_cast<size_t>(d)];
      if (out_prefix == prefix && dim > 1) return output(op, d);
      out_prefix *= dim;
      if (out_prefix > prefix) break;
    }
    throw Refused{"reshape moves the split dimension inside another one"};
  }

  void transpose(const ir::Op& op) {
    const int x = op.inputs[0];
    if (axis(x) == kUndecided) set(x, kWholeTensor);
    if (axis(x) < 0) return output(op, kWholeTensor);
    const int r = rankOf(shape(x));
    if (op.perm.empty()) return output(op, r - 1 - axis(x));
    const auto at = std::find(op.perm.begin(), op.perm.end(), axis(x));
    output(op, static_cast<int>(at - op.perm.begin()));
  }

  void reduce(const ir::Op& op, size_t index) {
    const int x = op.inputs[0];
    // A sum of all of an undecided tensor (mixed_float16's finite check of a GatherGrad's
    // gradient) is a scalar either way: it waits for the tensor's decision, a partial sum
    // if the tensor ends split.
    const bool everything = op.perm.empty() || static_cast<int>(op.perm.size()) == rankOf(shape(x));
    if (axis(x) == kUndecided && everything && op.reduction == ir::Reduction::kSum) {
      m_pending_sums.push_back(index);
      return output(op, kWholeTensor);
    }
    if (axis(x) == kUndecided) set(x, kWholeTensor);
    if (axis(x) < 0) return output(op, kWholeTensor);
    const bool all = op.perm.empty();
    if (all || std::find(op.perm.begin(), op.perm.end(), axis(x)) != op.perm.end()) {
      // A sum over the split dimension is a partial sum on each chip, all-reduced after it
      // (as a row-parallel matmul's); a mean, max or min of parts is not the whole's.
      if (op.reduction != ir::Reduction::kSum) throw Refused{"reduces over the split dimension"};
      m_partial.push_back(index);
      return output(op, kWholeTensor);
    }
    int o = axis(x);
    if (!op.keepdims)
      o -= static_cast<int>(std::count_if(op.perm.begin(), op.perm.end(), [&](int64_t d) { return d < axis(x); }));
    output(op, o);
  }

  void reduceSumTo(const ir::Op& op) {
    const int x = op.inputs[0];
    if (axis(x) == kUndecided) set(x, kWholeTensor);
    if (axis(x) < 0) return output(op, kWholeTensor);
    const Shape& out = shape(op.outputs[0]);
    const int o = axis(x) - (rankOf(shape(x)) - rankOf(out));
    if (o < 0 || out[static_cast<size_t>(o)] != shape(x)[static_cast<size_t>(axis(x))]) {
      throw Refused{"sums over the split dimension"};
    }
    output(op, o);
  }

  void broadcastTo(const ir::Op& op) {
    const int x = op.inputs[0];
    if (axis(x) == kUndecided) set(x, kWholeTensor);
    output(op, axis(x) < 0 ? kWholeTensor : axis(x) + rankOf(shape(op.outputs[0])) - rankOf(shape(x)));
  }

  // Slice (x -> out) or SliceGrad (dy -> x's shape): the same axis, from start / parts.
  void slice(const ir::Op& op) {
    const int x = op.inputs[0];
    if (axis(x) == kUndecided) set(x, kWholeTensor);
    const int a = axis(x);
    if (a < 0) return output(op, kWholeTensor);
    const auto d = static_cast<size_t>(a);
    if (op.steps[d] != 1 || op.starts[d] % m_parts != 0) throw Refused{"slices the split dimension unevenly"};
    output(op, a);
  }

  void concat(const ir::Op& op) {
    int a = kWholeTensor;
    for (const int in : op.inputs) a = axis(in) >= 0 ? axis(in) : a;
    for (const int in : op.inputs) require(in, a);
    output(op, a);
  }

  // Gather of an embedding table split along the gathered axis (vocabulary-parallel, as
  // Megatron-LM's embedding): each chip looks up the ids in its share of the rows and
  // zeros the others, so the whole output is a partial sum, all-reduced after the op.
  void gather(const ir::Op& op, size_t index) {
    const int data = op.inputs[0], indices = op.inputs[1];
    if (axis(indices) >= 0) throw Refused{"gathers by split indices"};
    if (axis(indices) == kUndecided) set(indices, kWholeTensor);
    if (axis(data) == kUndecided) set(data, kWholeTensor);
    if (axis(data) < 0) return output(op, kWholeTensor);
    if (axis(data) != op.axis) throw Refused{"gathers from a table split along another axis"};
    m_partial.push_back(index);
    output(op, kWholeTensor);
  }

  // A gather's gradient from whole operands can come out whole or split along any axis
  // (each chip adds only its share of the rows or columns): its first reader decides, so
  // a split table's gradient is split like the table.
  void gatherGrad(const ir::Op& op) {
    for (const int in : op.inputs) {
      if (axis(in) >= 0) throw Refused{"a GatherGrad cannot take a split operand"};
      if (axis(in) == kUndecided) set(in, kWholeTensor);
    }
    output(op, kUndecided);
  }

  // Softmax cross-entropy of logits split along the classes (a vocabulary-parallel LM
  // head): each chip holds its classes' share of every row's log-sum-exp and target logit,
  // combined by an all-reduce after the op (Megatron-LM all-reduces the rows' maxima, sums
  // and target logits, three vectors of one float per row; here the loss, one scalar); the
  // gradient stays split like the logits.
  void crossEntropy(const ir::Op& op, size_t index, bool gradient) {
    const int logits = op.inputs[0], labels = op.inputs[1];
    if (axis(labels) >= 0) throw Refused{"reads split labels"};
    if (axis(labels) == kUndecided) set(labels, kWholeTensor);
    if (axis(logits) == kUndecided) set(logits, kWholeTensor);
    if (axis(logits) < 0) return output(op, kWholeTensor);
    if (axis(logits) != rankOf(shape(logits)) - 1) throw Refused{"averages over split rows"};
    if (gradient) return output(op, axis(logits));
    m_partial.push_back(index);
    output(op, kWholeTensor);
  }

  void visit(const ir::Op& op, size_t index) {
    switch (op.type) {
      case OpType::kMatMul: return matmul(op, index);
      case OpType::kReshape: return reshape(op);
      case OpType::kTranspose: return transpose(op);
      case OpType::kReduce: return reduce(op, index);
      case OpType::kReduceSumTo: return reduceSumTo(op);
      case OpType::kBroadcastTo: return broadcastTo(op);
      case OpType::kSlice:
      case OpType::kSliceGrad: return slice(op);
      case OpType::kConcat: return concat(op);
      case OpType::kGather: return gather(op, index);
      case OpType::kGatherGrad: return gatherGrad(op);
      case OpType::kSoftmaxCrossEntropy: return crossEntropy(op, index, false);
      case OpType::kSoftmaxCrossEntropyGrad: return crossEntropy(op, index, true);
      case OpType::kSoftmax:
      case OpType::kLogSoftmax:
        if (axis(op.inputs[0]) == op.axis) throw Refused{"normalizes over the split dimension"};
        return elementwise(op);
      case OpType::kOptimizerUpdate:
        if (op.update_target == ir::UpdateTarget::kStep) return wholeOnly(op);
        return elementwise(op);
      case OpType::kSgdUpdate:
      case OpType::kAllReduce: return elementwise(op);
      default: return ir::isElementwise(op.type) ? elementwise(op) : wholeOnly(op);
    }
  }

  const ir::Graph& m_graph;
  int64_t m_parts;
  std::vector<int> m_axis;
  std::vector<size_t> m_partial;
  std::vector<size_t> m_pending_sums;  // sums of all of a tensor undecided when visited
  std::map<int, size_t> m_group_of;         // a tied undecided tensor -> its group in m_groups
  std::vector<std::vector<int>> m_groups;   // tensors decided together (tie)
  const ir::Op* m_op = nullptr;
};

}  // namespace

std::optional<SplitPlan> propagateSplits(const ir::Graph& graph, int64_t parts, const std::map<int, int>& seeds,
                                         SplitFailure* failure) {
  std::optional<Propagation> propagation;
  try {
    propagation.emplace(graph, parts, seeds);
    return propagation->run();
  } catch (const Refused& refused) {
    if (failure != nullptr) {
      const ir::Op* op = propagation ? propagation->op() : nullptr;
      *failure = {op != nullptr ? op->name : std::string(), refused.reason};
    }
    return std::nullopt;
  }
}

}  // namespace tpusim
