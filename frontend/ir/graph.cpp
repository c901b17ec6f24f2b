#include "frontend/ir/graph.hpp"

#include <algorithm>

#include "frontend/ir/graph_builders.hpp"
#include "sim/common/error.hpp"

namespace tpusim::ir {

using builder_detail::isFloat;
using builder_detail::makeOp;
using builder_detail::shapeError;

int64_t elementCount(const Shape& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

int64_t checkedElementCount(const Shape& shape, const std::string& what) {
  int64_t count = 1;
  bool overflow = false;
  for (int64_t dim : shape) {
    if (dim < 0) {
      std::string message = what;
      message.append(" has shape ").append(shapeToString(shape)).append(" with a negative dimension");
      throw Error(ErrorKind::kInvalidInput, message);
    }
    overflow = overflow || __builtin_mul_overflow(count, dim, &count);
  }
  if (overflow || count > kMaxTensorElements) {
    std::string message = what;
    message.append(" has shape ").append(shapeToString(shape)).append(" of ");
    if (overflow) {
      message.append("more than 2^63 elements (the product overflows int64)");
    } else {
      message.append(std::to_string(count)).append(" elements");
    }
    message.append(", above the 2^40 elements tpusim accepts in one tensor");
    throw Error(ErrorKind::kInvalidInput, message);
  }
  return count;
}

std::string shapeToString(const Shape& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ',';
    text += std::to_string(shape[i]);
  }
  text += ']';
  return text;
}

Shape broadcastShapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw Error(ErrorKind::kInvalidInput,
                  "shapes " + shapeToString(a) + " and " + shapeToString(b) + " do not broadcast");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

bool isElementwiseBinary(OpType type) {
  return type == OpType::kAdd || type == OpType::kSub || type == OpType::kMul || type == OpType::kDiv ||
         type == OpType::kMaximum || type == OpType::kMinimum;
}

bool isElementwise(OpType type) {
  switch (type) {
    case OpType::kScale:
    case OpType::kRelu:
    case OpType::kReluGrad:
    case OpType::kUnary:
    case OpType::kUnaryGrad:
    case OpType::kCast:
    case OpType::kCompare:
    case OpType::kWhere:
    case OpType::kPow:
    case OpType::kPowGrad: return true;
    default: return isElementwiseBinary(type);
  }
}

int Graph::newTensor(const std::string& name, Shape shape, DType dtype, TensorRole role) {
  std::string what = "tensor '";
  what.append(name).append("'");
  const int64_t count = checkedElementCount(shape, what);
  // A zero-size tensor is nothing a TPU step can run. Constants and integer weights may
  // be empty: they are compile-time values (an empty list of axes or pads).
  const bool compile_time = role == TensorRole::kConstant || (role == TensorRole::kWeight && !isFloat(dtype));
  if (count == 0 && !compile_time) {
    what.append(" has shape ")
        .append(shapeToString(shape))
        .append(" with a zero dimension (zero-size tensors are not supported)");
    throw Error(ErrorKind::kUnsupported, what);
  }
  Tensor tensor;
  tensor.id = static_cast<int>(m_tensors.size());
  tensor.name = name;
  tensor.shape = std::move(shape);
  tensor.dtype = dtype;
  tensor.role = role;
  m_tensors.push_back(std::move(tensor));
  m_producer.push_back(-1);
  return m_tensors.back().id;
}

int Graph::addInput(const std::string& name, Shape shape, DType dtype, TensorRole role) {
  return newTensor(name, std::move(shape), dtype, role);
}

int Graph::addWeight(const std::string& name, Shape shape, DType dtype) {
  return newTensor(name, std::move(shape), dtype, TensorRole::kWeight);
}

const Tensor& Graph::checked(int id, const std::string& op_name) const {
  if (id < 0 || static_cast<size_t>(id) >= m_tensors.size())
    shapeError(op_name, "operand " + std::to_string(id) + " does not exist");
  return m_tensors[static_cast<size_t>(id)];
}

int Graph::append(Op op, const std::string& out_name, Shape shape, DType dtype, TensorRole role) {
  const int out = newTensor(out_name, std::move(shape), dtype, role);
  op.outputs = {out};
  op.phase = op.type == OpType::kSgdUpdate || op.type == OpType::kOptimizerUpdate ? Phase::kUpdate : m_phase;
  m_producer[static_cast<size_t>(out)] = static_cast<int>(m_ops.size());
  m_ops.push_back(std::move(op));
  return out;
}

const Op* Graph::producer(int tensor) const {
  const int index = m_producer.at(static_cast<size_t>(tensor));
  return index < 0 ? nullptr : &m_ops[static_cast<size_t>(index)];
}

int Graph::matmul(const std::string& name, int a, int b, bool transpose_a, bool transpose_b, TensorRole role) {
  const Tensor& ta = checked(a, name);
  const Tensor& tb = checked(b, name);
  if (ta.shape.size() < 2 || tb.shape.size() < 2) {
    throw Error(ErrorKind::kUnsupported, "op '" + name + "': MatMul of a 1-D operand is not supported yet, got " +
                                             shapeToString(ta.shape) + " and " + shapeToString(tb.shape));
  }
  // int8 x int8 accumulates exactly into int32, as the MXU does (--precision int8).
  const bool int8 = ta.dtype == DType::kInt8 && tb.dtype == DType::kInt8;
  if (!int8 && (ta.dtype != tb.dtype || !isFloat(ta.dtype))) {
    shapeError(name, "MatMul operands must share one float dtype or both be int8");
  }
  const size_t ra = ta.shape.size();
  const size_t rb = tb.shape.size();
  const int64_t m = transpose_a ? ta.shape[ra - 1] : ta.shape[ra - 2];
  const int64_t k = transpose_a ? ta.shape[ra - 2] : ta.shape[ra - 1];
  const int64_t kb = transpose_b ? tb.shape[rb - 1] : tb.shape[rb - 2];
  const int64_t n = transpose_b ? tb.shape[rb - 2] : tb.shape[rb - 1];
  if (k != kb) {
    shapeError(name, "MatMul contracting dimensions differ: " + shapeToString(ta.shape) + (transpose_a ? "^T" : "") +
                         " x " + shapeToString(tb.shape) + (transpose_b ? "^T" : ""));
  }
  Shape out;
  try {
    out = broadcastShapes(Shape(ta.shape.begin(), ta.shape.end() - 2), Shape(tb.shape.begin(), tb.shape.end() - 2));
  } catch (const Error& error) {
    shapeError(name, std::string("MatMul batch dimensions: ") + error.what());
  }
  out.push_back(m);
  out.push_back(n);
  const DType dtype = int8 ? DType::kInt32 : ta.dtype;
  Op op = makeOp(name, OpType::kMatMul, {a, b});
  op.transpose_a = transpose_a;
  op.transpose_b = transpose_b;
  return append(std::move(op), name + ":out", std::move(out), dtype, role);
}

int Graph::binary(OpType type, const std::string& name, int a, int b, TensorRole role) {
  if (!isElementwiseBinary(type)) throw Error(ErrorKind::kInternal, "binary() given a non-binary op type");
  const Tensor& ta = checked(a, name);
  const Tensor& tb = checked(b, name);
  if (ta.dtype != tb.dtype) {
    shapeError(name, std::string(opTypeName(type)) + " operands have different dtypes (" + dtypeName(ta.dtype) +
                         " and " + dtypeName(tb.dtype) + ")");
  }
  Shape out;
  try {
    out = broadcastShapes(ta.shape, tb.shape);
  } catch (const Error& error) {
    shapeError(name, error.what());
  }
  const DType dtype = ta.dtype;
  Op op = makeOp(name, type, {a, b});
  return append(std::move(op), name + ":out", std::move(out), dtype, role);
}

int Graph::compare(CompareDirection direction, const std::string& name, int a, int b, TensorRole role) {
  const Tensor& ta = checked(a, name);
  const Tensor& tb = checked(b, name);
  if (ta.dtype != tb.dtype) {
    shapeError(name, std::string("Compare operands have different dtypes (") + dtypeName(ta.dtype) + " and " +
                         dtypeName(tb.dtype) + ")");
  }
  Shape out;
  try {
    out = broadcastShapes(ta.shape, tb.shape);
  } catch (const Error& error) {
    shapeError(name, error.what());
  }
  Op op = makeOp(name, OpType::kCompare, {a, b});
  op.compare = direction;
  return append(std::move(op), name + ":out", std::move(out), DType::kBool, role);
}

int Graph::allReduce(const std::string& name, int x, Reduction reduction, int64_t replicas, TensorRole role) {
  const Tensor& tx = checked(x, name);
  if (reduction != Reduction::kSum && reduction != Reduction::kMax && reduction != Reduction::kMin)
    shapeError(name, "an all-reduce sums, or takes the max or min");
  if (replicas < 1) shapeError(name, "an all-reduce needs at least one replica");
  Op op = makeOp(name, OpType::kAllReduce, {x});
  op.reduction = reduction;
  op.replicas = replicas;
  return append(std::move(op), name + ":out", tx.shape, tx.dtype, role);
}

int Graph::scale(const std::string& name, int x, double scalar, TensorRole role) {
  const Tensor& tx = checked(x, name);
  if (!isFloat(tx.dtype)) shapeError(name, "Scale needs a float tensor");
  Op op = makeOp(name, OpType::kScale, {x});
  op.scalar = scalar;
  return append(std::move(op), name + ":out", tx.shape, tx.dtype, role);
}

int Graph::reshape(const std::string& name, int x, Shape shape, TensorRole role) {
  const Tensor& tx = checked(x, name);
  if (elementCount(shape) != elementCount(tx.shape)) {
    shapeError(name, "cannot reshape " + shapeToString(tx.shape) + " to " + shapeToString(shape));
  }
  Op op = makeOp(name, OpType::kReshape, {x});
  const int out = append(std::move(op), name + ":out", std::move(shape), tx.dtype, role);
  m_tensors[static_cast<size_t>(out)].alias_of = x;
  return out;
}

int Graph::reduceSumTo(const std::string& name, int x, Shape shape, TensorRole role) {
  const Tensor& tx = checked(x, name);
  bool broadcasts = false;
  try {
    broadcasts = broadcastShapes(shape, tx.shape) == tx.shape;
  } catch (const Error&) {
  }
  if (!broadcasts) shapeError(name, shapeToString(tx.shape) + " is not a broadcast of " + shapeToString(shape));
  Op op = makeOp(name, OpType::kReduceSumTo, {x});
  return append(std::move(op), name + ":out", std::move(shape), tx.dtype, role);
}

int Graph::relu(const std::string& name, int x) {
  const Tensor& tx = checked(x, name);
  Op op = makeOp(name, OpType::kRelu, {x});
  return append(std::move(op), name + ":out", tx.shape, tx.dtype, TensorRole::kActivation);
}

int Graph::reluGrad(const std::string& name, int dy, int x) {
  const Tensor& tdy = checked(dy, name);
  const Tensor& tx = checked(x, name);
  if (tdy.shape != tx.shape) shapeError(name, "ReluGrad operands differ in shape");
  Op op = makeOp(name, OpType::kReluGrad, {dy, x});
  return append(std::move(op), name + ":out", tx.shape, tx.dtype, TensorRole::kGradient);
}

int Graph::softmaxCrossEntropy(const std::string& name, int logits, int labels) {
  const Tensor& tl = checked(logits, name);
  const Tensor& ty = checked(labels, name);
  if (tl.shape.size() != 2 || ty.shape.size() != 1 || ty.shape[0] != tl.shape[0]) {
    shapeError(name, "softmax cross-entropy needs logits [N, C] and labels [N], got " + shapeToString(tl.shape) +
                         " and " + shapeToString(ty.shape));
  }
  if (ty.dtype != DType::kInt64 && ty.dtype != DType::kInt32)
    shapeError(name, "labels must be int32 or int64 class ids");
  Op op = makeOp(name, OpType::kSoftmaxCrossEntropy, {logits, labels});
  return append(std::move(op), name + ":loss", {}, tl.dtype, TensorRole::kLoss);
}

int Graph::softmaxCrossEntropyGrad(const std::string& name, int logits, int labels) {
  const Tensor& tl = checked(logits, name);
  checked(labels, name);
  Op op = makeOp(name, OpType::kSoftmaxCrossEntropyGrad, {logits, labels});
  return append(std::move(op), name + ":out", tl.shape, tl.dtype, TensorRole::kGradient);
}

int Graph::sgdUpdate(const std::string& name, int weight, int gradient, double learning_rate) {
  const Tensor& tw = checked(weight, name);
  const Tensor& tg = checked(gradient, name);
  if (tw.role != TensorRole::kWeight) shapeError(name, "SGD updates weights only; '" + tw.name + "' is not one");
  if (tw.shape != tg.shape) {
    shapeError(name,
               "gradient shape " + shapeToString(tg.shape) + " differs from weight shape " + shapeToString(tw.shape));
  }
  Op op = makeOp(name, OpType::kSgdUpdate, {weight, gradient});
  op.scalar = learning_rate;
  const int out = append(std::move(op), tw.name + ":updated", tw.shape, tw.dtype, TensorRole::kWeight);
  m_tensors[static_cast<size_t>(out)].alias_of = weight;
  return out;
}

void Graph::freeze(int tensor) {
  Tensor& t = m_tensors.at(static_cast<size_t>(tensor));
  if (m_producer[static_cast<size_t>(tensor)] >= 0) throw Error(ErrorKind::kInternal, "freeze() of a computed tensor");
  if (t.role == TensorRole::kWeight) t.role = TensorRole::kConstant;
}

int Graph::addConstant(const std::string& name, Shape shape, DType dtype) {
  return newTensor(name, std::move(shape), dtype, TensorRole::kConstant);
}

bool isParametricUnary(UnaryKind kind) {
  return kind == UnaryKind::kLeakyRelu || kind == UnaryKind::kElu || kind == UnaryKind::kSelu;
}

int Graph::unary(UnaryKind kind, const std::string& name, int x, TensorRole role) {
  // A silent default alpha would compute another function than the model's.
  if (isParametricUnary(kind)) {
    throw Error(ErrorKind::kInternal, std::string(unaryKindName(kind)) + " '" + name + "' built without its alpha");
  }
  return unary(kind, name, x, 0.0, 1.0, role);
}

int Graph::unary(UnaryKind kind, const std::string& name, int x, double alpha, double gamma, TensorRole role) {
  const Tensor& tx = checked(x, name);
  if (!isFloat(tx.dtype)) shapeError(name, std::string(unaryKindName(kind)) + " needs a float tensor");
  Op op = makeOp(name, OpType::kUnary, {x});
  op.unary = kind;
  op.alpha = alpha;
  op.gamma = gamma;
  return append(std::move(op), name + ":out", tx.shape, tx.dtype, role);
}

int Graph::unaryGrad(UnaryKind kind, const std::string& name, int dy, int x, int y, double alpha, double gamma) {
  const Tensor& tx = checked(x, name);
  if (checked(dy, name).shape != tx.shape || checked(y, name).shape != tx.shape) {
    shapeError(name, "UnaryGrad operands differ in shape");
  }
  Op op = makeOp(name, OpType::kUnaryGrad, {dy, x, y});
  op.unary = kind;
  op.alpha = alpha;
  op.gamma = gamma;
  return append(std::move(op), name + ":out", tx.shape, tx.dtype, TensorRole::kGradient);
}

int Graph::transpose(const std::string& name, int x, std::vector<int64_t> perm, TensorRole role) {
  const Tensor& tx = checked(x, name);
  const auto rank = static_cast<int64_t>(tx.shape.size());
  if (perm.empty()) {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  if (static_cast<int64_t>(perm.size()) != rank)
    shapeError(name,
               "perm has " + std::to_string(perm.size()) + " entries for a rank-" + std::to_string(rank) + " tensor");
  Shape out;
  for (int64_t& axis : perm) {
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank || seen[static_cast<size_t>(axis)]) shapeError(name, "perm is not a permutation");
    seen[static_cast<size_t>(axis)] = true;
    out.push_back(tx.shape[static_cast<size_t>(axis)]);
  }
  Op op = makeOp(name, OpType::kTranspose, {x});
  op.perm = std::move(perm);
  const DType dtype = tx.dtype;
  return append(std::move(op), name + ":out", std::move(out), dtype, role);
}

int Graph::reduce(const std::string& name, int x, Reduction reduction, std::vector<int64_t> axes, bool keepdims) {
  const Tensor& tx = checked(x, name);
  if (reduction == Reduction::kNone) shapeError(name, "a reduction needs sum, mean, max or min");
  const bool extremum = reduction == Reduction::kMax || reduction == Reduction::kMin;
  if (!isFloat(tx.dtype) && !(extremum && tx.dtype != DType::kBool))
    shapeError(name, "sum and mean reductions need a float tensor, max and min a number tensor");
  if (axes.empty()) {
    for (size_t i = 0; i < tx.shape.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) shapeError(name, "an axis is repeated");
  Shape out;
  for (size_t i = 0; i < tx.shape.size(); ++i) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(i));
    if (!reduced) {
      out.push_back(tx.shape[i]);
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  for (int64_t axis : axes) {
    if (axis < 0 || axis >= static_cast<int64_t>(tx.shape.size()))
      shapeError(name, "axis " + std::to_string(axis) + " is out of range");
  }
  Op op = makeOp(name, OpType::kReduce, {x});
  op.reduction = reduction;
  op.perm = std::move(axes);
  op.keepdims = keepdims;
  const DType dtype = tx.dtype;
  return append(std::move(op), name + ":out", std::move(out), dtype, TensorRole::kActivation);
}

int Graph::broadcastTo(const std::string& name, int x, Shape shape, TensorRole role) {
  const Tensor& tx = checked(x, name);
  bool broadcasts = false;
  try {
    broadcasts = broadcastShapes(tx.shape, shape) == shape;
  } catch (const Error&) {
  }
  if (!broadcasts) shapeError(name, shapeToString(tx.shape) + " does not broadcast to " + shapeToString(shape));
  Op op = makeOp(name, OpType::kBroadcastTo, {x});
  const DType dtype = tx.dtype;
  return append(std::move(op), name + ":out", std::move(shape), dtype, role);
}

int Graph::concat(const std::string& name, const std::vector<int>& inputs, int64_t axis, TensorRole role) {
  if (inputs.empty()) shapeError(name, "Concat needs at least one input");
  const Tensor& first = checked(inputs[0], name);
  const auto rank = static_cast<int64_t>(first.shape.size());
  if (axis < -rank || axis >= rank) shapeError(name, "axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += rank;
  Shape out = first.shape;
  out[static_cast<size_t>(axis)] = 0;
  for (int input : inputs) {
    const Tensor& t = checked(input, name);
    Shape expected = first.shape;
    expected[static_cast<size_t>(axis)] =
        t.shape.size() == first.shape.size() ? t.shape[static_cast<size_t>(axis)] : -1;
    if (t.shape != expected || t.dtype != first.dtype) {
      shapeError(name, "Concat inputs must agree in dtype and in every dimension but the axis; got " +
                           shapeToString(first.shape) + " and " + shapeToString(t.shape));
    }
    out[static_cast<size_t>(axis)] += t.shape[static_cast<size_t>(axis)];
  }
  Op op = makeOp(name, OpType::kConcat, inputs);
  op.axis = axis;
  const DType dtype = first.dtype;
  return append(std::move(op), name + ":out", std::move(out), dtype, role);
}

int Graph::slice(const std::string& name, int x, int64_t axis, int64_t start, int64_t length, TensorRole role) {
  const Tensor& tx = checked(x, name);
  if (axis < 0 || axis >= static_cast<int64_t>(tx.shape.size()) || start < 0 || length < 0 ||
      start + length > tx.shape[static_cast<size_t>(axis)]) {
    shapeError(name, "slice out of range of " + shapeToString(tx.shape));
  }
  Shape out = tx.shape;
  out[static_cast<size_t>(axis)] = length;
  std::vector<int64_t> starts(tx.shape.size(), 0);
  starts[static_cast<size_t>(axis)] = start;
  return stridedSlice(name, x, std::move(starts), std::vector<int64_t>(tx.shape.size(), 1), std::move(out), role);
}

int Graph::stridedSlice(const std::string& name, int x, std::vector<int64_t> starts, std::vector<int64_t> steps,
                        Shape shape, TensorRole role) {
  const Tensor& tx = checked(x, name);
  const size_t rank = tx.shape.size();
  if (starts.size() != rank || steps.size() != rank || shape.size() != rank) shapeError(name, "slice rank mismatch");
  for (size_t d = 0; d < rank; ++d) {
    if (shape[d] == 0) continue;
    const int64_t last = starts[d] + (shape[d] - 1) * steps[d];
    if (steps[d] == 0 || starts[d] < 0 || starts[d] >= tx.shape[d] || last < 0 || last >= tx.shape[d]) {
      shapeError(name, "slice reads outside " + shapeToString(tx.shape));
    }
  }
  Op op = makeOp(name, OpType::kSlice, {x});
  op.starts = std::move(starts);
  op.steps = std::move(steps);
  const DType dtype = tx.dtype;
  return append(std::move(op), name + ":out", std::move(shape), dtype, role);
}

int Graph::sliceGrad(const std::string& name, int dy, const Op& slice, const Shape& x_shape) {
  const DType dtype = checked(dy, name).dtype;
  Op op = makeOp(name, OpType::kSliceGrad, {dy});
  op.starts = slice.starts;
  op.steps = slice.steps;
  return append(std::move(op), name + ":out", x_shape, dtype, TensorRole::kGradient);
}

int Graph::gather(const std::string& name, int data, int indices, int64_t axis) {
  const Tensor& td = checked(data, name);
  const Tensor& ti = checked(indices, name);
  const auto rank = static_cast<int64_t>(td.shape.size());
  if (rank == 0) shapeError(name, "Gather needs data of rank 1 or more");
  if (axis < -rank || axis >= rank) shapeError(name, "axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += rank;
  if (ti.dtype != DType::kInt64 && ti.dtype != DType::kInt32) shapeError(name, "Gather indices must be int32 or int64");
  Shape out(td.shape.begin(), td.shape.begin() + axis);
  out.insert(out.end(), ti.shape.begin(), ti.shape.end());
  out.insert(out.end(), td.shape.begin() + axis + 1, td.shape.end());
  Op op = makeOp(name, OpType::kGather, {data, indices});
  op.axis = axis;
  const DType dtype = td.dtype;
  return append(std::move(op), name + ":out", std::move(out), dtype, TensorRole::kActivation);
}

int Graph::gatherGrad(const std::string& name, int dy, int indices, const Shape& data_shape, int64_t axis,
                      TensorRole role) {
  const Tensor& tdy = checked(dy, name);
  const Tensor& ti = checked(indices, name);
  const auto rank = static_cast<int64_t>(data_shape.size());
  if (axis < 0 || axis >= rank) shapeError(name, "axis " + std::to_string(axis) + " is out of range");
  Shape gathered(data_shape.begin(), data_shape.begin() + axis);  // the gather's output: dy's shape
  gathered.insert(gathered.end(), ti.shape.begin(), ti.shape.end());
  gathered.insert(gathered.end(), data_shape.begin() + axis + 1, data_shape.end());
  if (tdy.shape != gathered) {
    shapeError(name, "GatherGrad's gradient is " + shapeToString(tdy.shape) + ", the gather's output " +
                         shapeToString(gathered));
  }
  Op op = makeOp(name, OpType::kGatherGrad, {dy, indices});
  op.axis = axis;
  const DType dtype = tdy.dtype;
  return append(std::move(op), name + ":out", data_shape, dtype, role);
}

int Graph::pow(const std::string& name, int a, int b) {
  const Tensor& ta = checked(a, name);
  const Tensor& tb = checked(b, name);
  if (ta.dtype == DType::kBool || tb.dtype == DType::kBool) shapeError(name, "Pow of booleans");
  Shape out;
  try {
    out = broadcastShapes(ta.shape, tb.shape);
  } catch (const Error& error) {
    shapeError(name, error.what());
  }
  Op op = makeOp(name, OpType::kPow, {a, b});
  const DType dtype = ta.dtype;
  return append(std::move(op), name + ":out", std::move(out), dtype, TensorRole::kActivation);
}

int Graph::cast(const std::string& name, int x, DType dtype, TensorRole role) {
  const Tensor& tx = checked(x, name);
  Op op = makeOp(name, OpType::kCast, {x});
  const Shape shape = tx.shape;
  return append(std::move(op), name + ":out", shape, dtype, role);
}

int Graph::powGrad(const std::string& name, int dy, const Op& pow, bool of_exponent) {
  const Tensor& tdy = checked(dy, name);
  Op op = makeOp(name, OpType::kPowGrad, {dy, pow.inputs[0], pow.inputs[1], pow.outputs[0]});
  op.axis = of_exponent ? 1 : 0;
  const DType dtype = tdy.dtype;
  return append(std::move(op), name + ":out", tdy.shape, dtype, TensorRole::kGradient);
}

int Graph::where(const std::string& name, int condition, int x, int y, TensorRole role) {
  const Tensor& tc = checked(condition, name);
  const Tensor& tx = checked(x, name);
  const Tensor& ty = checked(y, name);
  if (tc.dtype != DType::kBool) shapeError(name, "Where needs a bool condition");
  if (tx.dtype != ty.dtype) shapeError(name, "Where's branches have different dtypes");
  Shape out;
  try {
    out = broadcastShapes(tc.shape, broadcastShapes(tx.shape, ty.shape));
  } catch (const Error& error) {
    shapeError(name, error.what());
  }
  Op op = makeOp(name, OpType::kWhere, {condition, x, y});
  const DType dtype = tx.dtype;
  return append(std::move(op), name + ":out", std::move(out), dtype, role);
}

int Graph::nllLoss(const std::string& name, int logp, int labels, int weights, Reduction reduction,
                   std::optional<int64_t> ignore_index) {
  const Tensor& tp = checked(logp, name);
  const Tensor& ty = checked(labels, name);
  if (tp.shape.size() < 2) shapeError(name, "the loss needs scores [N, C, ...], got " + shapeToString(tp.shape));
  Shape expected = tp.shape;
  expected.erase(expected.begin() + 1);
  if (ty.shape != expected) {
    shapeError(name, "labels " + shapeToString(ty.shape) + " do not match scores " + shapeToString(tp.shape));
  }
  if (ty.dtype != DType::kInt64 && ty.dtype != DType::kInt32)
    shapeError(name, "labels must be int32 or int64 class ids");
  std::vector<int> inputs = {logp, labels};
  if (weights >= 0) {
    const Tensor& tw = checked(weights, name);
    if (tw.shape != Shape{tp.shape[1]}) shapeError(name, "class weights must be [C], got " + shapeToString(tw.shape));
    inputs.push_back(weights);
  }
  Op op = makeOp(name, OpType::kNllLoss, inputs);
  op.reduction = reduction;
  op.ignore_index = ignore_index;
  const DType dtype = tp.dtype;
  return append(std::move(op), name + ":loss", reduction == Reduction::kNone ? expected : Shape{}, dtype,
                TensorRole::kLoss);
}

}  // namespace tpusim::ir
