// The ONNX importer's compile-time evaluation. Exporters compute shapes in the
// graph (Shape, Gather, Concat, Unsqueeze, Cast ... feeding a Reshape or an
// Expand) and build masks from Range and comparisons. tpusim compiles static
// shapes, so a node whose inputs are all known while compiling is evaluated
// here and its result is a constant, which enters the graph only if a graph op
// uses it. Integer arithmetic wraps to the dtype; float results round to it
// (numerics.hpp), as the CPU executor does.
#include <algorithm>
#include <cmath>
#include <functional>

#include "frontend/import/onnx_importer.hpp"
#include "frontend/import/onnx_tensor.hpp"
#include "sim/common/numerics.hpp"

namespace tpusim::onnx_detail {

namespace {

using ir::Shape;
using ir::TensorValue;

bool isFloating(DType dtype) {
  return TensorValue::isFloating(dtype);
}

// A value computed while compiling lives in host memory: 2^26 elements (256 MiB of
// int32) is far above any shape computation or mask, and far below a failed allocation.
constexpr int64_t kMaxFoldedElements = int64_t{1} << 26;

void checkFoldable(const Shape& shape) {
  const int64_t count = ir::checkedElementCount(shape, "a compile-time value");
  if (count > kMaxFoldedElements) {
    std::string message = "a compile-time value of shape ";
    message.append(ir::shapeToString(shape)).append(" has ").append(std::to_string(count));
    message.append(" elements, above the 2^26 tpusim evaluates while compiling");
    throw Error(ErrorKind::kUnsupported, message);
  }
}

int64_t wrapInt(DType dtype, int64_t value) {
  switch (dtype) {
    case DType::kUInt8: return static_cast<uint8_t>(value);
    case DType::kInt8: return static_cast<int8_t>(value);
    case DType::kInt32: return static_cast<int32_t>(value);
    case DType::kUInt32: return static_cast<uint32_t>(value);
    case DType::kBool: return value != 0;
    default: return value;
  }
}

double at(const TensorValue& v, size_t i) {
  return isFloating(v.dtype) ? static_cast<double>(v.floats[i]) : static_cast<double>(v.ints[i]);
}

// Copies element `from` of `src` to element `to` of `dst` (same dtype family).
void copyElement(const TensorValue& src, size_t from, TensorValue& dst, size_t to) {
  if (isFloating(dst.dtype)) {
    dst.floats[to] = src.floats[from];
  } else {
    dst.ints[to] = src.ints[from];
  }
}

// For each element of `out` (row-major), the index of the element of an operand of
// shape `in` that numpy broadcasting reads.
std::vector<size_t> broadcastSources(const Shape& in, const Shape& out) {
  checkFoldable(out);
  const size_t rank = out.size();
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t d = in.size(); d-- > 0;) {
    const size_t od = d + rank - in.size();
    strides[od] = in[d] == 1 ? 0 : stride;
    stride *= in[d];
  }
  std::vector<size_t> sources(static_cast<size_t>(ir::elementCount(out)));
  std::vector<int64_t> index(rank, 0);
  int64_t at_in = 0;
  for (size_t o = 0; o < sources.size(); ++o) {
    sources[o] = static_cast<size_t>(at_in);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < out[d]) {
        at_in += strides[d];
        break;
      }
      at_in -= strides[d] * (out[d] - 1);
      index[d] = 0;
    }
  }
  return sources;
}

// The value of `x` converted to `dtype` (the CPU executor's Cast semantics).
TensorValue castValue(const TensorValue& x, DType dtype) {
  TensorValue out = TensorValue::zeros(x.shape, dtype);
  for (size_t i = 0; i < x.size(); ++i) {
    if (isFloating(dtype)) {
      // An integer converts straight to f64, or through float to the narrower types, as the executor's Cast does.
      const double value = isFloating(x.dtype)    ? x.floats[i]
                           : dtype == DType::kF64 ? static_cast<double>(x.ints[i])
                                                  : static_cast<float>(x.ints[i]);
      out.floats[i] = numerics::roundTo(dtype, value);
    } else if (!isFloating(x.dtype)) {
      out.ints[i] = wrapInt(dtype, x.ints[i]);
    } else if (dtype == DType::kBool) {
      out.ints[i] = x.floats[i] != 0.0;
    } else if (!std::isnan(x.floats[i])) {
      const double t = std::trunc(x.floats[i]);
      out.ints[i] = wrapInt(dtype, t >= 9.2e18 ? INT64_MAX : t <= -9.2e18 ? INT64_MIN : static_cast<int64_t>(t));
    }
  }
  return out;
}

TensorValue withShape(const TensorValue& x, Shape shape) {
  TensorValue out = x;
  out.shape = std::move(shape);
  return out;
}

// out = f(a, b) with broadcasting; `dtype` is the result's. Integer operands compute in
// int64 (int_op), float ones in double (float_op).
TensorValue binaryValue(const TensorValue& a, const TensorValue& b, DType dtype,
                        const std::function<int64_t(int64_t, int64_t)>& int_op,
                        const std::function<double(double, double)>& float_op) {
  const Shape shape = ir::broadcastShapes(a.shape, b.shape);
  const std::vector<size_t> from_a = broadcastSources(a.shape, shape);
  const std::vector<size_t> from_b = broadcastSources(b.shape, shape);
  TensorValue out = TensorValue::zeros(shape, dtype);
  const bool ints = !isFloating(a.dtype) && !isFloating(b.dtype);
  for (size_t i = 0; i < from_a.size(); ++i) {
    if (ints) {
      const int64_t r = int_op(a.ints[from_a[i]], b.ints[from_b[i]]);
      if (isFloating(dtype)) {
        out.floats[i] = dtype == DType::kF64 ? static_cast<double>(r) : static_cast<float>(r);
      } else {
        out.ints[i] = wrapInt(dtype, r);
      }
    } else {
      const double r = float_op(at(a, from_a[i]), at(b, from_b[i]));
      if (isFloating(dtype)) {
        out.floats[i] = numerics::roundTo(dtype, r);
      } else {
        out.ints[i] = wrapInt(dtype, static_cast<int64_t>(r));
      }
    }
  }
  return out;
}

// ScatterND: data with each of `indices`' last-dimension tuples (negative ones wrapped)
// replaced by, or combined with (add, mul, max, min), the matching slice of updates.
TensorValue scatterNdValue(const TensorValue& data, const TensorValue& indices, const TensorValue& updates,
                           const std::string& reduction, const std::string& label) {
  if (isFloating(indices.dtype) || indices.shape.empty()) invalid(label + ": ScatterND needs integer indices");
  const size_t depth = static_cast<size_t>(indices.shape.back());
  if (depth == 0 || depth > data.shape.size()) invalid(label + ": ScatterND's index tuples exceed data's rank");
  Shape expected(indices.shape.begin(), indices.shape.end() - 1);
  expected.insert(expected.end(), data.shape.begin() + static_cast<int64_t>(depth), data.shape.end());
  if (updates.shape != expected || updates.dtype != data.dtype) {
    invalid(label + ": ScatterND's updates must have shape " + ir::shapeToString(expected) + " and data's type");
  }
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" && reduction != "min") {
    invalid(label + ": ScatterND's reduction '" + reduction + "' is not none, add, mul, max or min");
  }
  const int64_t slice = ir::elementCount(Shape(data.shape.begin() + static_cast<int64_t>(depth), data.shape.end()));
  TensorValue out = data;
  const size_t tuples = indices.size() / depth;
  for (size_t t = 0; t < tuples; ++t) {
    int64_t row = 0;
    for (size_t d = 0; d < depth; ++d) {
      const int64_t dim = data.shape[d];
      int64_t index = indices.ints[t * depth + d];
      if (index < 0) index += dim;
      if (index < 0 || index >= dim) invalid(label + ": a ScatterND index is out of range");
      row = row * dim + index;
    }
    for (int64_t e = 0; e < slice; ++e) {
      const auto to = static_cast<size_t>(row * slice + e),
                 from = static_cast<size_t>(static_cast<int64_t>(t) * slice + e);
      const auto combine = [&](auto old, auto update) {
        if (reduction == "add") return old + update;
        if (reduction == "mul") return old * update;
        if (reduction == "max") return std::max(old, update);
        if (reduction == "min") return std::min(old, update);
        return update;
      };
      if (isFloating(out.dtype)) {
        out.floats[to] = numerics::roundTo(out.dtype, combine(out.floats[to], updates.floats[from]));
      } else {
        out.ints[to] = wrapInt(out.dtype, combine(out.ints[to], updates.ints[from]));
      }
    }
  }
  return out;
}

int64_t divide(int64_t x, int64_t y) {
  if (y == 0) throw Error(ErrorKind::kInvalidInput, "integer division by zero");
  return x / y;  // truncates toward zero, as the CPU executor's Div
}

}  // namespace

bool Importer::foldNode(const onnx::NodeProto& node, const std::string& label) {
  // NonZero's output shape depends on its input's values: known only when those are.
  static const std::set<std::string> kCompileTimeOnly = {"ConstantOfShape", "EyeLike", "NonZero",
                                                         "Range",           "Shape",   "Size"};
  static const std::set<std::string> kFoldable = {
      "Abs",       "Add",     "Cast",           "Concat",    "Div",   "Equal",       "Expand", "Flatten",
      "Gather",    "Greater", "GreaterOrEqual", "Identity",  "Less",  "LessOrEqual", "Mod",    "Mul",
      "Neg",       "Not",     "Reshape",        "ScatterND", "Slice", "Squeeze",     "Sub",    "Transpose",
      "Unsqueeze", "Where"};
  const std::string& type = node.op_type();
  const bool compile_time_only = kCompileTimeOnly.count(type) > 0;
  if (!compile_time_only && !kFoldable.count(type)) return false;
  if (node.output_size() != 1) invalid(label + " must have one output");

  if (type == "EyeLike") {  // needs only the input's shape
    expectInputs(node, 1, 1);
    rejectAttributesExcept(node, {"dtype", "k"});
    const Shape shape = shapeOf(node.input(0), label);
    if (shape.size() != 2) invalid(label + ": EyeLike needs a 2-D input");
    const DType dtype = attribute(node, "dtype")
                            ? fromOnnxType(static_cast<int32_t>(intAttribute(node, "dtype", 0)), label + "'s dtype")
                        : constantValue(node.input(0)) ? constantValue(node.input(0))->dtype
                                                       : m_result.graph.tensor(value(node.input(0), label)).dtype;
    const int64_t k = intAttribute(node, "k", 0);
    TensorValue eye = TensorValue::zeros(shape, dtype);
    for (int64_t i = 0; i < shape[0]; ++i) {
      const int64_t j = i + k;
      if (j < 0 || j >= shape[1]) continue;
      const auto at = static_cast<size_t>(i * shape[1] + j);
      if (isFloating(dtype)) {
        eye.floats[at] = 1.0;
      } else {
        eye.ints[at] = 1;
      }
    }
    defineConstant(node, 0, std::move(eye));
    return true;
  }
  if (type == "Shape" || type == "Size") {
    expectInputs(node, 1, 1);
    const Shape shape = shapeOf(node.input(0), label);
    if (type == "Size") {
      rejectAttributesExcept(node, {});
      defineConstant(node, 0, TensorValue{{}, DType::kInt64, {}, {ir::elementCount(shape)}});
      return true;
    }
    rejectAttributesExcept(node, {"start", "end"});
    // start and end (opset 15) clamp to [0, rank], negative ones counting from the end.
    const auto rank = static_cast<int64_t>(shape.size());
    const auto bound = [&](const char* name, int64_t fallback) {
      int64_t v = intAttribute(node, name, fallback);
      if (v < 0) v += rank;
      return std::clamp<int64_t>(v, 0, rank);
    };
    const int64_t start = bound("start", 0);
    const int64_t end = std::max(start, bound("end", rank));
    std::vector<int64_t> dims(shape.begin() + start, shape.begin() + end);
    defineConstant(node, 0, TensorValue{{static_cast<int64_t>(dims.size())}, DType::kInt64, {}, dims});
    return true;
  }

  std::vector<const TensorValue*> in;
  for (const auto& input : node.input()) {
    if (input.empty()) {
      in.push_back(nullptr);
      continue;
    }
    const TensorValue* constant = constantValue(input);
    if (constant == nullptr) {
      if (!compile_time_only) return false;
      throw Error(ErrorKind::kUnsupported, label + ": tpusim evaluates " + type +
                                               " only while compiling, and its input '" + input +
                                               "' is computed at run time");
    }
    in.push_back(constant);
  }
  const auto input = [&](size_t i) -> const TensorValue& {
    if (i >= in.size() || in[i] == nullptr) invalid(label + " lacks input " + std::to_string(i));
    return *in[i];
  };

  TensorValue out;
  if (type == "Identity") {
    expectInputs(node, 1, 1);
    out = input(0);
  } else if (type == "Neg" || type == "Abs") {
    expectInputs(node, 1, 1);
    rejectAttributesExcept(node, {});
    out = input(0);
    for (double& v : out.floats) v = type == "Neg" ? -v : std::abs(v);
    for (int64_t& v : out.ints) v = wrapInt(out.dtype, type == "Neg" ? -v : (v < 0 ? -v : v));
  } else if (type == "Not") {
    expectInputs(node, 1, 1);
    rejectAttributesExcept(node, {});
    if (input(0).dtype != DType::kBool) invalid(label + ": Not needs a bool input");
    out = input(0);
    for (int64_t& v : out.ints) v = v == 0;
  } else if (type == "Cast") {
    expectInputs(node, 1, 1);
    rejectAttributesExcept(node, {"to", "saturate"});
    if (!attribute(node, "to")) invalid(label + ": Cast needs a 'to' type");
    out = castValue(input(0), fromOnnxType(static_cast<int32_t>(intAttribute(node, "to", 0)), label + "'s 'to'"));
  } else if (type == "Reshape" || type == "Flatten" || type == "Squeeze" || type == "Unsqueeze") {
    out = withShape(input(0), viewShape(node, label, input(0).shape));
  } else if (type == "Concat") {
    rejectAttributesExcept(node, {"axis"});
    if (!attribute(node, "axis")) invalid(label + ": Concat needs an axis");
    const TensorValue& first = input(0);
    const auto rank = static_cast<int64_t>(first.shape.size());
    const int64_t axis = normalizeAxis(intAttribute(node, "axis", 0), rank, label);
    Shape shape = first.shape;
    shape[static_cast<size_t>(axis)] = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      Shape expected = first.shape;
      expected[static_cast<size_t>(axis)] =
          input(i).shape.size() == first.shape.size() ? input(i).shape[static_cast<size_t>(axis)] : -1;
      if (input(i).shape != expected || input(i).dtype != first.dtype)
        invalid(label + ": Concat inputs must agree in dtype and in every dimension but the axis");
      shape[static_cast<size_t>(axis)] += expected[static_cast<size_t>(axis)];
    }
    out = TensorValue::zeros(shape, first.dtype);
    const int64_t outer = ir::elementCount(Shape(shape.begin(), shape.begin() + axis));
    const int64_t inner = ir::elementCount(Shape(shape.begin() + axis + 1, shape.end()));
    size_t to = 0;
    for (int64_t o = 0; o < outer; ++o) {
      for (size_t i = 0; i < in.size(); ++i) {
        const int64_t block = input(i).shape[static_cast<size_t>(axis)] * inner;
        for (int64_t e = 0; e < block; ++e) copyElement(input(i), static_cast<size_t>(o * block + e), out, to++);
      }
    }
  } else if (type == "Gather") {
    expectInputs(node, 2, 2);
    rejectAttributesExcept(node, {"axis"});
    const TensorValue& data = input(0);
    const TensorValue& indices = input(1);
    if (isFloating(indices.dtype)) invalid(label + ": Gather indices must be integers");
    const auto rank = static_cast<int64_t>(data.shape.size());
    if (rank == 0) invalid(label + ": Gather needs data of rank 1 or more");
    const int64_t axis = normalizeAxis(intAttribute(node, "axis", 0), rank, label);
    Shape shape(data.shape.begin(), data.shape.begin() + axis);
    shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
    shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
    out = TensorValue::zeros(shape, data.dtype);
    const int64_t outer = ir::elementCount(Shape(data.shape.begin(), data.shape.begin() + axis));
    const int64_t inner = ir::elementCount(Shape(data.shape.begin() + axis + 1, data.shape.end()));
    const int64_t length = data.shape[static_cast<size_t>(axis)];
    size_t to = 0;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t given : indices.ints) {
        const int64_t index = given < 0 ? given + length : given;
        if (index < 0 || index >= length)
          invalid(label + ": index " + std::to_string(given) + " is out of range for a dimension of " +
                  std::to_string(length));
        for (int64_t e = 0; e < inner; ++e)
          copyElement(data, static_cast<size_t>((o * length + index) * inner + e), out, to++);
      }
    }
  } else if (type == "Slice") {
    const TensorValue& data = input(0);
    std::vector<int64_t> first;
    std::vector<int64_t> stride;
    Shape shape;
    sliceGeometry(node, label, data.shape, first, stride, shape);
    out = TensorValue::zeros(shape, data.dtype);
    std::vector<int64_t> strides(data.shape.size(), 1);
    for (size_t d = data.shape.size(); d-- > 1;) strides[d - 1] = strides[d] * data.shape[d];
    std::vector<int64_t> index(shape.size(), 0);
    for (size_t o = 0; o < out.size(); ++o) {
      int64_t from = 0;
      for (size_t d = 0; d < shape.size(); ++d) from += (first[d] + index[d] * stride[d]) * strides[d];
      copyElement(data, static_cast<size_t>(from), out, o);
      for (size_t d = shape.size(); d-- > 0;) {
        if (++index[d] < shape[d]) break;
        index[d] = 0;
      }
    }
  } else if (type == "Expand") {
    expectInputs(node, 2, 2);
    const TensorValue& x = input(0);
    const Shape shape = ir::broadcastShapes(x.shape, constantInts(node, 1, label));
    out = TensorValue::zeros(shape, x.dtype);
    const std::vector<size_t> sources = broadcastSources(x.shape, shape);
    for (size_t i = 0; i < sources.size(); ++i) copyElement(x, sources[i], out, i);
  } else if (type == "Where") {
    expectInputs(node, 3, 3);
    const TensorValue& c = input(0);
    const TensorValue& x = input(1);
    const TensorValue& y = input(2);
    if (c.dtype != DType::kBool) invalid(label + ": Where needs a bool condition");
    if (x.dtype != y.dtype) invalid(label + ": Where's branches have different dtypes");
    const Shape shape = ir::broadcastShapes(c.shape, ir::broadcastShapes(x.shape, y.shape));
    const std::vector<size_t> from_c = broadcastSources(c.shape, shape);
    const std::vector<size_t> from_x = broadcastSources(x.shape, shape);
    const std::vector<size_t> from_y = broadcastSources(y.shape, shape);
    out = TensorValue::zeros(shape, x.dtype);
    for (size_t i = 0; i < from_c.size(); ++i) {
      if (c.ints[from_c[i]] != 0) {
        copyElement(x, from_x[i], out, i);
      } else {
        copyElement(y, from_y[i], out, i);
      }
    }
  } else if (type == "Add" || type == "Sub" || type == "Mul" || type == "Div") {
    expectInputs(node, 2, 2);
    const TensorValue& a = input(0);
    const TensorValue& b = input(1);
    if (a.dtype != b.dtype) invalid(label + ": operands have different dtypes");
    if (type == "Add") {
      out = binaryValue(a, b, a.dtype, std::plus<int64_t>(), std::plus<double>());
    } else if (type == "Sub") {
      out = binaryValue(a, b, a.dtype, std::minus<int64_t>(), std::minus<double>());
    } else if (type == "Mul") {
      out = binaryValue(a, b, a.dtype, std::multiplies<int64_t>(), std::multiplies<double>());
    } else {
      out = binaryValue(a, b, a.dtype, divide, std::divides<double>());
    }
  } else if (type == "Mod") {
    expectInputs(node, 2, 2);
    rejectAttributesExcept(node, {"fmod"});
    const TensorValue& a = input(0);
    const TensorValue& b = input(1);
    if (a.dtype != b.dtype) invalid(label + ": operands have different dtypes");
    const bool truncated = intAttribute(node, "fmod", 0) != 0;
    if (isFloating(a.dtype) && !truncated) invalid(label + ": a float Mod needs fmod = 1");
    out = binaryValue(
        a, b, a.dtype,
        [&](int64_t x, int64_t y) {
          if (y == 0) invalid(label + ": integer modulo by zero");
          const int64_t r = x % y;  // the sign of x, as C's fmod
          return !truncated && r != 0 && (r < 0) != (y < 0) ? r + y : r;
        },
        [](double x, double y) { return std::fmod(x, y); });
  } else if (type == "NonZero") {
    expectInputs(node, 1, 1);
    rejectAttributesExcept(node, {});
    const TensorValue& x = input(0);
    const Shape strides = [&] {
      Shape result(x.shape.size(), 1);
      for (size_t d = x.shape.size(); d-- > 1;) result[d - 1] = result[d] * x.shape[d];
      return result;
    }();
    std::vector<int64_t> hits;  // flat positions, in row-major order
    for (size_t i = 0; i < x.size(); ++i) {
      if (isFloating(x.dtype) ? x.floats[i] != 0.0 : x.ints[i] != 0) hits.push_back(static_cast<int64_t>(i));
    }
    const auto count = static_cast<int64_t>(hits.size());
    out = TensorValue::zeros({static_cast<int64_t>(x.shape.size()), count}, DType::kInt64);
    for (size_t d = 0; d < x.shape.size(); ++d) {
      for (size_t h = 0; h < hits.size(); ++h) {
        out.ints[d * hits.size() + h] = hits[h] / strides[d] % x.shape[d];
      }
    }
  } else if (type == "Transpose") {
    expectInputs(node, 1, 1);
    rejectAttributesExcept(node, {"perm"});
    const TensorValue& x = input(0);
    const size_t rank = x.shape.size();
    std::vector<int64_t> perm;
    if (const auto* attr = attribute(node, "perm")) perm.assign(attr->ints().begin(), attr->ints().end());
    if (perm.empty()) {
      for (size_t d = rank; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
    }
    std::vector<bool> seen(rank, false);
    for (int64_t p : perm) {
      if (perm.size() != rank || p < 0 || p >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(p)])
        invalid(label + ": perm is not a permutation of the input's " + std::to_string(rank) + " dimensions");
      seen[static_cast<size_t>(p)] = true;
    }
    Shape shape;
    for (int64_t p : perm) shape.push_back(x.shape[static_cast<size_t>(p)]);
    out = TensorValue::zeros(shape, x.dtype);
    Shape strides(rank, 1);
    for (size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * x.shape[d];
    std::vector<int64_t> index(rank, 0);
    for (size_t o = 0; o < out.size(); ++o) {
      int64_t from = 0;
      for (size_t d = 0; d < rank; ++d) from += index[d] * strides[static_cast<size_t>(perm[d])];
      copyElement(x, static_cast<size_t>(from), out, o);
      for (size_t d = rank; d-- > 0;) {
        if (++index[d] < shape[d]) break;
        index[d] = 0;
      }
    }
  } else if (type == "ScatterND") {
    expectInputs(node, 3, 3);
    rejectAttributesExcept(node, {"reduction"});
    out = scatterNdValue(input(0), input(1), input(2),
                         attribute(node, "reduction") ? attribute(node, "reduction")->s() : "none", label);
  } else if (type == "Equal" || type == "Less" || type == "LessOrEqual" || type == "Greater" ||
             type == "GreaterOrEqual") {
    expectInputs(node, 2, 2);
    rejectAttributesExcept(node, {});
    const TensorValue& a = input(0);
    const TensorValue& b = input(1);
    if (a.dtype != b.dtype) invalid(label + ": operands have different dtypes");
    const auto compare = [&](auto less, auto equal) {
      return binaryValue(
          a, b, DType::kBool, [&](int64_t x, int64_t y) -> int64_t { return less(x, y) || equal(x, y); },
          [&](double x, double y) -> double { return less(x, y) || equal(x, y); });
    };
    const auto never = [](auto, auto) { return false; };
    if (type == "Equal") {
      out = compare(never, [](auto x, auto y) { return x == y; });
    } else if (type == "Less") {
      out = compare([](auto x, auto y) { return x < y; }, never);
    } else if (type == "LessOrEqual") {
      out = compare([](auto x, auto y) { return x <= y; }, never);
    } else if (type == "Greater") {
      out = compare([](auto x, auto y) { return x > y; }, never);
    } else {
      out = compare([](auto x, auto y) { return x >= y; }, never);
    }
  } else if (type == "Range") {
    expectInputs(node, 3, 3);
    rejectAttributesExcept(node, {});
    const TensorValue& start = input(0);
    if (start.size() != 1 || input(1).size() != 1 || input(2).size() != 1)
      invalid(label + ": Range needs scalar start, limit and delta");
    if (input(1).dtype != start.dtype || input(2).dtype != start.dtype)
      invalid(label + ": Range's inputs have different dtypes");
    const double first = at(start, 0);
    const double limit = at(input(1), 0);
    const double delta = at(input(2), 0);
    if (delta == 0) invalid(label + ": Range's delta is 0");
    const double steps = std::max(0.0, std::ceil((limit - first) / delta));
    // Compared as a double first: a cast of a huge (or NaN) count to int64 is undefined.
    if (!(steps <= static_cast<double>(kMaxFoldedElements)))
      throw Error(ErrorKind::kUnsupported,
                  label + ": Range has more than the 2^26 elements tpusim evaluates while compiling");
    const auto count = static_cast<int64_t>(steps);
    out = TensorValue::zeros({count}, start.dtype);
    for (int64_t i = 0; i < count; ++i) {
      if (isFloating(start.dtype)) {
        out.floats[static_cast<size_t>(i)] = numerics::roundTo(start.dtype, first + static_cast<double>(i) * delta);
      } else {
        out.ints[static_cast<size_t>(i)] = wrapInt(start.dtype, start.ints[0] + i * input(2).ints[0]);
      }
    }
  } else {  // ConstantOfShape
    expectInputs(node, 1, 1);
    rejectAttributesExcept(node, {"value"});
    const std::vector<int64_t> shape = constantInts(node, 0, label);
    TensorValue fill{{}, DType::kF32, {0.0}, {}};
    if (const auto* attr = attribute(node, "value")) fill = decodeOnnxTensor(attr->t());
    if (fill.size() != 1) invalid(label + ": ConstantOfShape's value must have one element");
    for (int64_t dim : shape) {
      if (dim < 0) invalid(label + ": the shape has a negative dimension");
    }
    checkFoldable(shape);
    out = TensorValue::zeros(shape, fill.dtype);
    if (isFloating(fill.dtype)) {
      std::fill(out.floats.begin(), out.floats.end(), fill.floats[0]);
    } else {
      std::fill(out.ints.begin(), out.ints.end(), fill.ints[0]);
    }
  }
  defineConstant(node, 0, std::move(out));
  return true;
}

}  // namespace tpusim::onnx_detail
