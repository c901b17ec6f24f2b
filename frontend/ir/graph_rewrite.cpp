// Graph utilities for compiler passes: reordering ops, dropping dead ones, and
// rewiring (removing and replacing ops, redirecting reads).
#include <algorithm>
#include <map>

#include "frontend/ir/graph.hpp"
#include "sim/common/error.hpp"

namespace tpusim::ir {

Graph Graph::reordered(const std::vector<size_t>& order) const {
  if (order.size() != m_ops.size()) throw Error(ErrorKind::kInternal, "reordered(): not a permutation of the ops");
  Graph result = *this;
  result.m_ops.clear();
  std::vector<bool> ready(m_tensors.size(), false), used(m_ops.size(), false);
  for (size_t t = 0; t < m_tensors.size(); ++t) ready[t] = m_producer[t] < 0;
  for (size_t index : order) {
    if (index >= m_ops.size() || used[index]) throw Error(ErrorKind::kInternal, "reordered(): not a permutation");
    used[index] = true;
    const Op& op = m_ops[index];
    for (int input : op.inputs) {
      if (!ready[static_cast<size_t>(input)]) {
        throw Error(ErrorKind::kInternal, "reordered(): op '" + op.name + "' would read a tensor not yet written");
      }
    }
    for (int output : op.outputs) {
      ready[static_cast<size_t>(output)] = true;
      result.m_producer[static_cast<size_t>(output)] = static_cast<int>(result.m_ops.size());
    }
    result.m_ops.push_back(op);
  }
  return result;
}

Graph Graph::withoutDeadOps() const {
  std::vector<bool> needed(m_tensors.size(), false);
  for (int output : m_outputs) needed[static_cast<size_t>(output)] = true;
  std::vector<bool> keep(m_ops.size(), false);
  for (size_t i = m_ops.size(); i-- > 0;) {
    const Op& op = m_ops[i];
    bool live = false;
    for (int output : op.outputs) {
      const Tensor& tensor = m_tensors[static_cast<size_t>(output)];
      live = live || needed[static_cast<size_t>(output)] || tensor.role == TensorRole::kLoss || tensor.alias_of >= 0;
    }
    if (op.type == OpType::kReshape) {  // a view is needed when what reads it is
      live = needed[static_cast<size_t>(op.outputs[0])];
    }
    if (!live) continue;
    keep[i] = true;
    for (int input : op.inputs) needed[static_cast<size_t>(input)] = true;
  }
  Graph result = *this;
  result.m_ops.clear();
  std::fill(result.m_producer.begin(), result.m_producer.end(), -1);
  for (size_t i = 0; i < m_ops.size(); ++i) {
    if (!keep[i]) continue;
    for (int output : m_ops[i].outputs)
      result.m_producer[static_cast<size_t>(output)] = static_cast<int>(result.m_ops.size());
    result.m_ops.push_back(m_ops[i]);
  }
  return result;
}

namespace {

[[noreturn]] void rewriteError(const std::string& detail) {
  throw Error(ErrorKind::kInternal, "rewired(): " + detail);
}

}  // namespace

Graph Graph::rewired(const Rewrite& rewrite) const {
  const size_t op_count = m_ops.size(), tensor_count = m_tensors.size();
  if (rewrite.remove.size() != op_count || rewrite.replace.size() != op_count ||
      rewrite.redirect.size() != tensor_count) {
    rewriteError("the rewrite was made for another graph");
  }
  const auto resolve = [&](int tensor) {
    for (size_t hops = 0; tensor >= 0 && rewrite.redirect[static_cast<size_t>(tensor)] >= 0; ++hops) {
      if (hops == tensor_count) rewriteError("redirects form a cycle");
      tensor = rewrite.redirect[static_cast<size_t>(tensor)];
      if (static_cast<size_t>(tensor) >= tensor_count) rewriteError("a redirect names no tensor");
    }
    return tensor;
  };
  Graph result = *this;
  result.m_ops.clear();
  std::fill(result.m_producer.begin(), result.m_producer.end(), -1);
  for (Tensor& tensor : result.m_tensors) tensor.alias_of = resolve(tensor.alias_of);
  std::vector<bool> ready(tensor_count, false);
  for (size_t t = 0; t < tensor_count; ++t) ready[t] = m_producer[t] < 0;
  for (size_t i = 0; i < op_count; ++i) {
    if (rewrite.remove[i]) {
      if (rewrite.replace[i]) rewriteError("op '" + m_ops[i].name + "' is both removed and replaced");
      continue;
    }
    Op op = rewrite.replace[i] ? *rewrite.replace[i] : m_ops[i];
    if (op.outputs != m_ops[i].outputs) rewriteError("the replacement of '" + m_ops[i].name + "' writes other tensors");
    for (int& input : op.inputs) {
      if (input < 0 || static_cast<size_t>(input) >= tensor_count) rewriteError("op '" + op.name + "' reads no tensor");
      input = resolve(input);
      if (!ready[static_cast<size_t>(input)]) {
        rewriteError("op '" + op.name + "' would read '" + m_tensors[static_cast<size_t>(input)].name +
                     "', which no kept op writes before it");
      }
    }
    if (rewrite.replace[i]) result.checkReplacement(m_ops[i], op);
    for (int output : op.outputs) {
      const int alias = result.m_tensors[static_cast<size_t>(output)].alias_of;
      if (alias >= 0 && !ready[static_cast<size_t>(alias)]) {
        rewriteError("op '" + op.name + "' writes over '" + m_tensors[static_cast<size_t>(alias)].name +
                     "', which no kept op writes before it");
      }
      ready[static_cast<size_t>(output)] = true;
      result.m_producer[static_cast<size_t>(output)] = static_cast<int>(result.m_ops.size());
    }
    result.m_ops.push_back(std::move(op));
  }
  for (int& output : result.m_outputs) {
    const int moved = resolve(output);
    if (moved == output) continue;
    if (result.m_producer[static_cast<size_t>(moved)] < 0 ||
        std::find(m_outputs.begin(), m_outputs.end(), moved) != m_outputs.end()) {
      rewriteError("graph output '" + m_tensors[static_cast<size_t>(output)].name + "' cannot move to '" +
                   m_tensors[static_cast<size_t>(moved)].name + "' (not computed, or an output already)");
    }
    Tensor& target = result.m_tensors[static_cast<size_t>(moved)];
    target.name = m_tensors[static_cast<size_t>(output)].name;
    target.role = m_tensors[static_cast<size_t>(output)].role;
    output = moved;
  }
  return result;
}

void Graph::checkReplacement(const Op& old, const Op& op) {
  if (op.outputs.size() != 1) rewriteError("replacing an op of several outputs");
  const Tensor out = m_tensors[static_cast<size_t>(op.outputs[0])];
  if (op.type != OpType::kMatMul && op.type != OpType::kTranspose && op.type != OpType::kReshape &&
      op.type != OpType::kScale) {
    if (op.type != old.type || op.inputs.size() != old.inputs.size()) {
      rewriteError("replacing '" + old.name + "' by a " + opTypeName(op.type) + " op, which has no builder check");
    }
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const Tensor& now = m_tensors[static_cast<size_t>(op.inputs[i])];
      const Tensor& was = m_tensors[static_cast<size_t>(old.inputs[i])];
      if (now.shape != was.shape || now.dtype != was.dtype) {
        rewriteError("the replacement of '" + old.name + "' reads operands of other shapes");
      }
    }
    return;
  }
  // Replay the op through its builder over stand-ins of its inputs.
  Graph scratch;
  std::vector<int> inputs;
  for (int input : op.inputs) {
    const Tensor& t = m_tensors[static_cast<size_t>(input)];
    inputs.push_back(scratch.addInput(t.name, t.shape, t.dtype, t.role));
  }
  const auto operand = [&](size_t i) {
    if (i >= inputs.size()) rewriteError("the replacement of '" + old.name + "' lacks operands");
    return inputs[i];
  };
  int built = -1;
  switch (op.type) {
    case OpType::kMatMul:
      built = scratch.matmul(op.name, operand(0), operand(1), op.transpose_a, op.transpose_b);
      break;
    case OpType::kTranspose: built = scratch.transpose(op.name, operand(0), op.perm); break;
    case OpType::kReshape: built = scratch.reshape(op.name, operand(0), out.shape); break;
    default: built = scratch.scale(op.name, operand(0), op.scalar); break;
  }
  const Tensor& made = scratch.tensor(built);
  if (made.shape != out.shape || made.dtype != out.dtype) {
    rewriteError("the replacement of '" + old.name + "' gives " + dtypeName(made.dtype) + shapeToString(made.shape) +
                 ", not " + dtypeName(out.dtype) + shapeToString(out.shape));
  }
  m_tensors[static_cast<size_t>(op.outputs[0])].alias_of = op.type == OpType::kReshape ? op.inputs[0] : -1;
}

}  // namespace tpusim::ir
