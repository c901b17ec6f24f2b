#include "frontend/passes/constant_fold.hpp"

#include <algorithm>
#include <utility>

namespace tpusim {

namespace {

using ir::Graph;
using ir::Op;
using ir::OpType;
using ir::Tensor;
using ir::TensorRole;

bool computedRole(TensorRole role) {
  return role == TensorRole::kActivation || role == TensorRole::kGradient || role == TensorRole::kLoss;
}

// The elements of the dims before the last two (a MatMul operand's batch).
int64_t batchOf(const ir::Shape& shape) {
  return shape.size() < 2 ? 1 : ir::elementCount(ir::Shape(shape.begin(), shape.end() - 2));
}

bool swapsLastTwo(const std::vector<int64_t>& perm) {
  const size_t rank = perm.size();
  if (rank < 2) return false;
  for (size_t d = 0; d + 2 < rank; ++d) {
    if (perm[d] != static_cast<int64_t>(d)) return false;
  }
  return perm[rank - 2] == static_cast<int64_t>(rank - 1) && perm[rank - 1] == static_cast<int64_t>(rank - 2);
}

bool isIdentityPerm(const std::vector<int64_t>& perm) {
  for (size_t d = 0; d < perm.size(); ++d) {
    if (perm[d] != static_cast<int64_t>(d)) return false;
  }
  return true;
}

// Who reads and writes what, in one graph.
struct Uses {
  explicit Uses(const Graph& graph)
      : graph(graph),
        readers(graph.tensors().size()),
        producer(graph.tensors().size(), -1),
        output(graph.tensors().size(), false),
        aliased(graph.tensors().size(), false),
        written_over(graph.tensors().size(), false),
        in_place(graph.tensors().size()) {
    const std::vector<Op>& ops = graph.ops();
    for (size_t i = 0; i < ops.size(); ++i) {
      for (size_t slot = 0; slot < ops[i].inputs.size(); ++slot) {
        readers[static_cast<size_t>(ops[i].inputs[slot])].emplace_back(i, slot);
      }
      for (int out : ops[i].outputs) producer[static_cast<size_t>(out)] = static_cast<int>(i);
    }
    for (int out : graph.outputs()) output[static_cast<size_t>(out)] = true;
    for (const Tensor& tensor : graph.tensors()) {
      if (tensor.alias_of < 0) continue;
      aliased[static_cast<size_t>(tensor.alias_of)] = true;
      const int made = producer[static_cast<size_t>(tensor.id)];
      if (made >= 0 && ops[static_cast<size_t>(made)].type != OpType::kReshape) {
        written_over[static_cast<size_t>(tensor.alias_of)] = true;
        in_place[static_cast<size_t>(root(tensor.id))].push_back(static_cast<size_t>(made));
      }
    }
  }

  int root(int tensor) const {
    while (graph.tensor(tensor).alias_of >= 0) tensor = graph.tensor(tensor).alias_of;
    return tensor;
  }
  // Some op after `after` and before `before` writes over the storage of `tensor`.
  bool updatedBetween(int tensor, size_t after, size_t before) const {
    for (size_t at : in_place[static_cast<size_t>(root(tensor))]) {
      if (at > after && at < before) return true;
    }
    return false;
  }
  // The tensor may lose its producer: nothing but ops reads it, and nothing writes over it.
  bool removable(int tensor) const {
    const size_t t = static_cast<size_t>(tensor);
    return !output[t] && graph.tensor(tensor).role != TensorRole::kLoss && !written_over[t];
  }

  const Graph& graph;
  std::vector<std::vector<std::pair<size_t, size_t>>> readers;  // per tensor: (op, input slot)
  std::vector<int> producer;                                    // per tensor: op index, or -1
  std::vector<bool> output, aliased, written_over;
  std::vector<std::vector<size_t>> in_place;  // per storage root: the ops that write over it
};

// One pass over the ops, applying each rule where it fits and no earlier rewrite of this
// sweep touched the ops it involves.
class Sweep {
 public:
  explicit Sweep(const Graph& graph)
      : m_graph(graph), m_uses(graph), m_rewrite(graph), m_touched(graph.ops().size(), false) {}

  // Returns whether anything changed; then `result` is the rewritten graph.
  bool run(Graph& result) {
    const std::vector<Op>& ops = m_graph.ops();
    for (size_t i = 0; i < ops.size(); ++i) {
      if (m_touched[i]) continue;
      if (identity(i) || transposeIntoMatMul(i) || transposeOfMatMul(i) || chain(i)) m_changed = true;
    }
    if (m_changed) result = m_graph.rewired(m_rewrite);
    return m_changed;
  }

 private:
  const Op& op(size_t i) const { return m_graph.ops()[i]; }
  const Tensor& tensor(int id) const { return m_graph.tensor(id); }
  const auto& readersOf(int tensor) const { return m_uses.readers[static_cast<size_t>(tensor)]; }

  bool isIdentity(const Op& o) const {
    if (o.inputs.empty()) return false;
    const Tensor& x = tensor(o.inputs[0]);
    const Tensor& y = tensor(o.outputs[0]);
    if (x.shape != y.shape || x.dtype != y.dtype) return false;
    switch (o.type) {
      case OpType::kScale: return o.scalar == 1.0;
      case OpType::kReshape:
      case OpType::kBroadcastTo:
      case OpType::kCast: return true;
      case OpType::kTranspose: return isIdentityPerm(o.perm);
      case OpType::kConcat: return o.inputs.size() == 1;
      case OpType::kSlice:
        for (size_t d = 0; d < x.shape.size(); ++d) {
          if (o.starts[d] != 0 || (o.steps[d] != 1 && x.shape[d] > 1)) return false;
        }
        return true;
      default: return false;
    }
  }

  // Removes an op that copies its input; readers read the input.
  bool identity(size_t i) {
    const Op& o = op(i);
    if (!isIdentity(o)) return false;
    const int x = o.inputs[0], y = o.outputs[0];
    if (m_uses.written_over[static_cast<size_t>(y)]) return false;
    for (const auto& [reader, slot] : readersOf(y)) {
      if (m_touched[reader] || m_uses.updatedBetween(x, i, reader)) return false;
    }
    if (!m_uses.removable(y)) {
      // A graph output or a loss: the input takes its place if it is computed and free.
      const Tensor& in = tensor(x);
      if (m_uses.producer[static_cast<size_t>(x)] < 0 || m_uses.output[static_cast<size_t>(x)] ||
          !computedRole(in.role) || m_uses.written_over[static_cast<size_t>(y)] ||
          m_uses.updatedBetween(x, i, m_graph.ops().size())) {
        return false;
      }
    }
    m_rewrite.remove[i] = true;
    m_rewrite.redirect[static_cast<size_t>(y)] = x;
    touch(i);
    for (const auto& [reader, slot] : readersOf(y)) touch(reader);
    return true;
  }

  // Transpose(x) of the last two dims, read only by MatMuls: their flags instead.
  bool transposeIntoMatMul(size_t i) {
    const Op& o = op(i);
    if (o.type != OpType::kTranspose || !swapsLastTwo(o.perm)) return false;
    const int x = o.inputs[0], y = o.outputs[0];
    if (!m_uses.removable(y) || m_uses.aliased[static_cast<size_t>(y)] || readersOf(y).empty()) return false;
    std::vector<size_t> matmuls;
    for (const auto& [reader, slot] : readersOf(y)) {
      const Op& mm = op(reader);
      if (mm.type != OpType::kMatMul || m_touched[reader] || m_uses.updatedBetween(x, i, reader)) return false;
      if (slot == 0 && !mm.transpose_a && stacksRows(mm) && batchOf(tensor(mm.outputs[0]).shape) > 1) return false;
      if (std::find(matmuls.begin(), matmuls.end(), reader) == matmuls.end()) matmuls.push_back(reader);
    }
    for (size_t reader : matmuls) {
      Op mm = op(reader);
      if (mm.inputs[0] == y) {
        mm.inputs[0] = x;
        mm.transpose_a = !mm.transpose_a;
      }
      if (mm.inputs[1] == y) {
        mm.inputs[1] = x;
        mm.transpose_b = !mm.transpose_b;
      }
      m_rewrite.replace[reader] = std::move(mm);
      touch(reader);
    }
    m_rewrite.remove[i] = true;
    touch(i);
    return true;
  }

  // Transpose(MatMul(a, b)) of the last two dims, the product read by nothing else:
  // MatMul(b, a) with the flags swapped and flipped, under the MatMul's name.
  bool transposeOfMatMul(size_t i) {
    const Op& o = op(i);
    if (o.type != OpType::kTranspose || !swapsLastTwo(o.perm)) return false;
    const int product = o.inputs[0];
    const int from = m_uses.producer[static_cast<size_t>(product)];
    if (from < 0 || m_touched[static_cast<size_t>(from)]) return false;
    const Op& mm = op(static_cast<size_t>(from));
    if (mm.type != OpType::kMatMul || readersOf(product).size() != 1 || !m_uses.removable(product) ||
        m_uses.aliased[static_cast<size_t>(product)]) {
      return false;
    }
    const auto at = static_cast<size_t>(from);
    if (m_uses.updatedBetween(mm.inputs[0], at, i) || m_uses.updatedBetween(mm.inputs[1], at, i)) return false;
    Op swapped = mm;
    swapped.inputs = {mm.inputs[1], mm.inputs[0]};
    swapped.transpose_a = !mm.transpose_b;
    swapped.transpose_b = !mm.transpose_a;
    swapped.outputs = o.outputs;
    // The lowering stacks the rows of a batched lhs only when it is not transposed.
    if (stacksRows(mm) && !stacksRows(swapped) && batchOf(tensor(o.outputs[0]).shape) > 1) return false;
    m_rewrite.replace[i] = std::move(swapped);
    m_rewrite.remove[at] = true;
    touch(i);
    touch(at);
    return true;
  }

  // Reshape(Reshape(x)), Transpose(Transpose(x)), Scale(Scale(x)): one op reading x.
  bool chain(size_t i) {
    const Op& outer = op(i);
    if (outer.type != OpType::kReshape && outer.type != OpType::kTranspose && outer.type != OpType::kScale) {
      return false;
    }
    const int middle = outer.inputs[0];
    const int from = m_uses.producer[static_cast<size_t>(middle)];
    if (from < 0 || m_touched[static_cast<size_t>(from)]) return false;
    const auto at = static_cast<size_t>(from);
    const Op& inner = op(at);
    if (inner.type != outer.type) return false;
    const int x = inner.inputs[0];
    if (m_uses.updatedBetween(x, at, i)) return false;
    Op merged = outer;
    merged.inputs = {x};
    if (outer.type == OpType::kTranspose) {
      for (size_t d = 0; d < outer.perm.size(); ++d) {
        merged.perm[d] = inner.perm[static_cast<size_t>(outer.perm[d])];
      }
    } else if (outer.type == OpType::kScale) {
      merged.scalar = inner.scalar * outer.scalar;
    }
    m_rewrite.replace[i] = std::move(merged);
    touch(i);
    // The inner op goes when the outer one was all that read it.
    const bool only_reader = readersOf(middle).size() == 1 && m_uses.removable(middle) &&
                             (outer.type == OpType::kReshape || !m_uses.aliased[static_cast<size_t>(middle)]);
    if (only_reader) {
      m_rewrite.remove[at] = true;
      touch(at);
    }
    return true;
  }

  // Whether the lowering folds this MatMul's lhs batch into its rows (lower_gemm.cpp).
  bool stacksRows(const Op& mm) const { return batchOf(tensor(mm.inputs[1]).shape) == 1 && !mm.transpose_a; }

  void touch(size_t op_index) { m_touched[op_index] = true; }

  const Graph& m_graph;
  Uses m_uses;
  Graph::Rewrite m_rewrite;
  std::vector<bool> m_touched;
  bool m_changed = false;
};

}  // namespace

ir::Graph constantFold(const ir::Graph& graph) {
  Graph current = graph;
  // Each sweep removes or merges at least one op, so this ends; the bound is a guard.
  for (size_t sweeps = 0; sweeps <= graph.ops().size(); ++sweeps) {
    Graph next;
    if (!Sweep(current).run(next)) break;
    current = std::move(next);
  }
  return current;
}

}  // namespace tpusim
