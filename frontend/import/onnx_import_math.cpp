// ONNX arithmetic and selection ops as compositions of IR ops (each of which has its CPU and
// CUDA kernels, its vector-unit cost and its gradient):
//   Mod         fmod = 1: C's remainder, a - b trunc(a / b); fmod = 0 (integers): that remainder
//               plus b where it is not 0 and its sign differs from b's (Python's)
//   CumSum      a scan of log2(n) shifted adds along the axis (Hillis and Steele); exclusive
//               shifts the input by one first; reverse reads the axis backwards, before and after
//   ReduceProd  a tree of halving multiplies over the reduced axes, moved last and flattened
//   ArgMax/Min  the first (select_last_index: last) position along the axis equal to the extremum
//   Hardmax     1 at ArgMax's position along the axis, else 0 (a Compare of the positions, Cast)
//   TopK        k rounds of that over the elements not yet taken, largest (or smallest) first,
//               ties to the lower index; the values are gathered at the indices, so they train
#include <map>

#include "frontend/import/onnx_importer.hpp"

namespace tpusim::onnx_detail {

int Importer::argExtremum(const std::string& name, int x, int64_t axis, bool max, bool last) {
  ir::Graph& g = m_result.graph;
  const ir::Shape shape = g.tensor(x).shape;  // a copy: the graph grows below
  const int64_t length = shape[static_cast<size_t>(axis)];
  const int extremum = g.reduce(name + ".extremum", x, max ? ir::Reduction::kMax : ir::Reduction::kMin, {axis}, true);
  const int hit = g.compare(ir::CompareDirection::kEq, name + ".hit", x, extremum);
  ir::Shape along(shape.size(), 1);
  along[static_cast<size_t>(axis)] = length;
  ir::TensorValue positions{along, DType::kInt64, {}, {}};
  for (int64_t i = 0; i < length; ++i) positions.ints.push_back(i);
  const int candidates =
      g.where(name + ".candidates", hit, constantTensor(name + ".positions", std::move(positions)),
              constantTensor(name + ".none", ir::TensorValue{{}, DType::kInt64, {}, {last ? -1 : length}}));
  return g.reduce(name, candidates, last ? ir::Reduction::kMax : ir::Reduction::kMin, {axis}, true);
}

void Importer::importMath(const onnx::NodeProto& node, const std::string& label) {
  const std::string& type = node.op_type();
  ir::Graph& g = m_result.graph;
  const std::string name = opName(node);
  const int x = value(node.input(0), label);
  const ir::Shape shape = g.tensor(x).shape;
  const DType dtype = g.tensor(x).dtype;
  const bool floating = isFloatingDType(dtype);
  const auto rank = static_cast<int64_t>(shape.size());
  std::map<std::string, int> constants;  // one of each per node
  const auto constant = [&](const std::string& part, double v, DType of) {
    const auto it = constants.find(part);
    if (it != constants.end()) return it->second;
    ir::TensorValue scalar = ir::TensorValue::zeros({}, of);
    if (ir::TensorValue::isFloating(of)) {
      scalar.floats[0] = v;
    } else {
      scalar.ints[0] = static_cast<int64_t>(v);
    }
    return constants[part] = constantTensor(name + "." + part, std::move(scalar));
  };
  const auto mul = [&](const std::string& at, int a, int b) { return g.binary(ir::OpType::kMul, at, a, b); };

  if (type == "Mod") {
    expectInputs(node, 2, 2);
    rejectAttributesExcept(node, {"fmod"});
    const int b = value(node.input(1), label);
    if (g.tensor(b).dtype != dtype) invalid(label + ": operands have different dtypes");
    if (dtype == DType::kBool) invalid(label + ": Mod needs numbers");
    const bool truncated = intAttribute(node, "fmod", 0) != 0;
    if (floating && !truncated) invalid(label + ": a float Mod needs fmod = 1");
    const int zero = constant("zero", 0, dtype);
    const int quotient = g.binary(ir::OpType::kDiv, name + ".quotient", x, b);  // integers truncate
    int whole = quotient;
    if (floating) {
      whole = g.where(name + ".truncated", g.compare(ir::CompareDirection::kLt, name + ".negative", quotient, zero),
                      g.unary(ir::UnaryKind::kCeil, name + ".ceil", quotient),
                      g.unary(ir::UnaryKind::kFloor, name + ".floor", quotient));
    }
    const bool python = !truncated;
    int out = g.binary(ir::OpType::kSub, python ? name + ".remainder" : name, x, mul(name + ".multiple", whole, b));
    if (python) {
      const auto negative = [&](const std::string& part, int v) {
        return g.compare(ir::CompareDirection::kLt, name + "." + part, v, zero);
      };
      const int differ = g.compare(ir::CompareDirection::kNe, name + ".signs_differ", negative("r_negative", out),
                                   negative("b_negative", b));
      const int nonzero = g.compare(ir::CompareDirection::kNe, name + ".nonzero", out, zero);
      const int wrong = g.where(name + ".wrong_sign", nonzero, differ, constant("false", 0, DType::kBool));
      out = g.where(name, wrong, g.add(name + ".shifted", out, b), out);
    }
    define(node, out);
    return;
  }

  if (type == "CumSum") {
    expectInputs(node, 2, 2);
    rejectAttributesExcept(node, {"exclusive", "reverse"});
    if (dtype == DType::kBool) invalid(label + ": CumSum needs numbers");
    const std::vector<int64_t> given = constantInts(node, 1, label);
    if (given.size() != 1) invalid(label + ": CumSum's axis must be a scalar");
    const int64_t axis = normalizeAxis(given[0], rank, label);
    const auto a = static_cast<size_t>(axis);
    const int64_t length = shape[a];
    const int zero = constant("zero", 0, dtype);
    const auto reversed = [&](const std::string& part, int v) {
      std::vector<int64_t> starts(shape.size(), 0), steps(shape.size(), 1);
      starts[a] = length - 1;
      steps[a] = -1;
      return g.stridedSlice(name + "." + part, v, starts, steps, shape);
    };
    const auto shifted = [&](const std::string& part, int v, int64_t by) {
      std::vector<int64_t> low(shape.size(), 0), high(shape.size(), 0);
      low[a] = by;
      high[a] = -by;
      return g.pad(name + "." + part, v, low, high, ir::PadMode::kConstant, zero);
    };
    const bool reverse = intAttribute(node, "reverse", 0) != 0;
    int v = reverse ? reversed("backwards", x) : x;
    if (intAttribute(node, "exclusive", 0) != 0) v = shifted("exclusive", v, 1);
    for (int64_t by = 1; by < length; by *= 2) {
      const std::string part = "scan" + std::to_string(by);
      v = g.add(name + "." + part, v, shifted(part + ".shift", v, by));
    }
    if (reverse) v = reversed("forwards", v);
    define(node, g.reshape(name, v, shape));
    return;
  }

  if (type == "ReduceProd") {
    expectInputCount(node, 1, 2, label);
    rejectAttributesExcept(node, {"axes", "keepdims", "noop_with_empty_axes"});
    if (dtype == DType::kBool) invalid(label + ": ReduceProd needs numbers");
    std::vector<int64_t> axes;
    if (const auto* attr = attribute(node, "axes")) axes.assign(attr->ints().begin(), attr->ints().end());
    if (node.input_size() == 2 && !node.input(1).empty()) axes = constantInts(node, 1, label);
    if (axes.empty() && intAttribute(node, "noop_with_empty_axes", 0) != 0) {
      define(node, g.reshape(name, x, shape));
      return;
    }
    std::vector<bool> reduced(shape.size(), axes.empty());
    for (int64_t axis : axes) reduced[static_cast<size_t>(normalizeAxis(axis, rank, label))] = true;
    std::vector<int64_t> perm;
    ir::Shape flat;
    int64_t count = 1;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (!reduced[d]) {
        perm.push_back(static_cast<int64_t>(d));
        flat.push_back(shape[d]);
      }
    }
    for (size_t d = 0; d < shape.size(); ++d) {
      if (reduced[d]) {
        perm.push_back(static_cast<int64_t>(d));
        count *= shape[d];
      }
    }
    const size_t last = flat.size();
    flat.push_back(count);
    int v = g.reshape(name + ".flat", g.transpose(name + ".reduced_last", x, perm), flat);
    for (int round = 0; count > 1; ++round) {
      const std::string part = name + ".half" + std::to_string(round);
      if (count % 2 != 0) {
        std::vector<int64_t> low(flat.size(), 0), high(flat.size(), 0);
        high[last] = 1;
        v = g.pad(part + ".even", v, low, high, ir::PadMode::kConstant, constant("one", 1, dtype));
        ++count;
      }
      count /= 2;
      v = mul(part, g.slice(part + ".low", v, static_cast<int64_t>(last), 0, count, ir::TensorRole::kActivation),
              g.slice(part + ".high", v, static_cast<int64_t>(last), count, count, ir::TensorRole::kActivation));
    }
    ir::Shape out;
    const bool keepdims = intAttribute(node, "keepdims", 1) != 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (!reduced[d]) out.push_back(shape[d]);
      if (reduced[d] && keepdims) out.push_back(1);
    }
    define(node, g.reshape(name, v, out));
    return;
  }

  if (dtype == DType::kBool) invalid(label + ": " + type + " needs numbers");
  if (type == "Hardmax") {
    expectInputs(node, 1, 1);
    rejectAttributesExcept(node, {"axis"});
    if (!floating) invalid(label + ": Hardmax needs a float input");
    if (rank == 0) invalid(label + ": Hardmax needs a tensor of rank 1 or more");
    const int64_t axis = normalizeAxis(intAttribute(node, "axis", -1), rank, label);
    const int first = argExtremum(name + ".argmax", x, axis, true, false);
    ir::Shape along(shape.size(), 1);
    along[static_cast<size_t>(axis)] = shape[static_cast<size_t>(axis)];
    ir::TensorValue positions{along, DType::kInt64, {}, {}};
    for (int64_t i = 0; i < along[static_cast<size_t>(axis)]; ++i) positions.ints.push_back(i);
    const int hit = g.compare(ir::CompareDirection::kEq, name + ".hit",
                              constantTensor(name + ".positions", std::move(positions)), first);
    define(node, g.cast(name, hit, dtype));
    return;
  }
  if (type == "ArgMax" || type == "ArgMin") {
    expectInputs(node, 1, 1);
    rejectAttributesExcept(node, {"axis", "keepdims", "select_last_index"});
    if (rank == 0) invalid(label + ": " + type + " needs a tensor of rank 1 or more");
    const int64_t axis = normalizeAxis(intAttribute(node, "axis", 0), rank, label);
    const bool keepdims = intAttribute(node, "keepdims", 1) != 0;
    int out = argExtremum(keepdims ? name : name + ".kept", x, axis, type == "ArgMax",
                          intAttribute(node, "select_last_index", 0) != 0);
    if (!keepdims) {
      ir::Shape dropped = shape;
      dropped.erase(dropped.begin() + axis);
      out = g.reshape(name, out, dropped);
    }
    define(node, out);
    return;
  }

  // TopK
  expectInputs(node, 2, 2);
  rejectAttributesExcept(node, {"axis", "largest", "sorted"});
  if (node.output_size() != 2) invalid(label + ": TopK has two outputs, Values and Indices");
  if (rank == 0) invalid(label + ": TopK needs a tensor of rank 1 or more");
  const int64_t axis = normalizeAxis(intAttribute(node, "axis", -1), rank, label);
  const int64_t length = shape[static_cast<size_t>(axis)];
  const std::vector<int64_t> given = constantInts(node, 1, label);
  if (given.size() != 1) invalid(label + ": TopK's K must hold one value");
  const int64_t k = given[0];
  if (k < 1 || k > length) {
    if (k == 0) throw Error(ErrorKind::kUnsupported, label + ": TopK with K = 0 has zero-size outputs");
    invalid(label + ": K = " + std::to_string(k) + " is outside [1, " + std::to_string(length) + "]");
  }
  const bool largest = intAttribute(node, "largest", 1) != 0;
  // Taken elements read as x's opposite extremum, which no untaken one falls short of; the hit
  // mask also excludes them, so ties with it still rank by index.
  const int floor_value =
      g.reduce(name + ".opposite", x, largest ? ir::Reduction::kMin : ir::Reduction::kMax, {axis}, true);
  ir::Shape along(shape.size(), 1);
  along[static_cast<size_t>(axis)] = length;
  ir::TensorValue position_values{along, DType::kInt64, {}, {}};
  for (int64_t i = 0; i < length; ++i) position_values.ints.push_back(i);
  const int positions = constantTensor(name + ".positions", std::move(position_values));
  int taken = -1;
  std::vector<int> picked;
  for (int64_t round = 0; round < k; ++round) {
    const std::string part = name + ".pick" + std::to_string(round);
    const int candidates = taken < 0 ? x : g.where(part + ".untaken", taken, floor_value, x);
    const int best =
        g.reduce(part + ".best", candidates, largest ? ir::Reduction::kMax : ir::Reduction::kMin, {axis}, true);
    int hit = g.compare(ir::CompareDirection::kEq, part + ".hit", candidates, best);
    if (taken >= 0) hit = g.where(part + ".new_hit", taken, constant("false", 0, DType::kBool), hit);
    const int index =
        g.reduce(part, g.where(part + ".candidates", hit, positions, constant("length", length, DType::kInt64)),
                 ir::Reduction::kMin, {axis}, true);
    picked.push_back(index);
    const int now = g.compare(ir::CompareDirection::kEq, part + ".taken_now", positions, index);
    taken = taken < 0 ? now : g.where(part + ".taken", now, constant("true", 1, DType::kBool), taken);
  }
  const int indices = picked.size() == 1 ? picked[0] : g.concat(name + ".indices", picked, axis);
  const int values = g.gather(name + ".values", g.reshape(name + ".flat", x, {ir::elementCount(shape)}),
                              flatElementIndex(name + ".at", indices, shape, axis), 0);
  defineOutput(node, 0, values);
  defineOutput(node, 1, g.reshape(name + ".Indices", indices, g.tensor(indices).shape));
}

}  // namespace tpusim::onnx_detail
