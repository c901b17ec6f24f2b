// Ops that select by position or value, as a compile-time constant and a Where (whose
// kernels, costs and gradient exist):
//   Trilu   x where the constant [N, M] mask of its last two dimensions holds (upper: j - i >= k,
//           lower: j - i <= k; k a constant input, 0 if absent), else 0
//   OneHot  on where indices (wrapped when negative, read as integers) equal a constant
//           range of depth placed at `axis`, else off; values = [off, on]
#include "frontend/import/onnx_importer.hpp"

namespace tpusim::onnx_detail {

void Importer::importMasked(const onnx::NodeProto& node, const std::string& label) {
  ir::Graph& g = m_result.graph;
  const std::string name = opName(node);
  const auto constant = [&](const std::string& part, ir::TensorValue value) {
    const int id = g.addConstant(name + "." + part, value.shape, value.dtype);
    m_result.initializers.emplace(name + "." + part, std::move(value));
    return id;
  };
  if (node.op_type() == "Trilu") {
    expectInputCount(node, 1, 2, label);
    rejectAttributesExcept(node, {"upper"});
    const int x = value(node.input(0), label);
    const ir::Shape& shape = g.tensor(x).shape;
    if (shape.size() < 2) invalid(label + ": Trilu needs a tensor of rank 2 or more");
    int64_t k = 0;
    if (node.input_size() == 2 && !node.input(1).empty()) {
      const std::vector<int64_t> given = constantInts(node, 1, label);
      if (given.size() != 1) invalid(label + ": Trilu's k must be a scalar");
      k = given[0];
    }
    const bool upper = intAttribute(node, "upper", 1) != 0;
    const int64_t rows = shape[shape.size() - 2], cols = shape.back();
    ir::TensorValue mask{{rows, cols}, DType::kBool, {}, {}};
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) mask.ints.push_back(upper ? j - i >= k : j - i <= k);
    }
    ir::TensorValue zero = ir::TensorValue::zeros({}, g.tensor(x).dtype);
    define(node, g.where(name, constant("mask", std::move(mask)), x, constant("zero", std::move(zero))));
    return;
  }
  // OneHot
  expectInputCount(node, 3, 3, label);
  rejectAttributesExcept(node, {"axis"});
  int indices = value(node.input(0), label);
  // depth: a constant of any numeric type (exporters write float ones), read as an integer.
  const ir::TensorValue* depth_value = constantValue(node.input(1));
  if (depth_value == nullptr) {
    const auto init = m_result.initializers.find(node.input(1));
    if (init != m_result.initializers.end()) depth_value = &init->second;
  }
  if (depth_value == nullptr || depth_value->size() != 1) {
    throw Error(ErrorKind::kUnsupported, label +
                                             ": OneHot's depth must be a constant scalar: tpusim compiles static "
                                             "shapes");
  }
  const auto depth = static_cast<int64_t>(ir::TensorValue::isFloating(depth_value->dtype) ? depth_value->floats[0]
                                                                                          : depth_value->ints[0]);
  if (depth < 1) invalid(label + ": OneHot's depth must be positive");
  const int values = value(node.input(2), label);
  if (ir::elementCount(g.tensor(values).shape) != 2) invalid(label + ": OneHot's values must be [off, on]");
  if (ir::TensorValue::isFloating(g.tensor(indices).dtype)) {
    indices = g.cast(name + ".integral", indices, DType::kInt64);  // truncated, as ONNX casts them
  } else if (g.tensor(indices).dtype != DType::kInt64) {
    indices = g.cast(name + ".int64", indices, DType::kInt64);
  }
  const ir::Shape shape = g.tensor(indices).shape;  // a copy: the graph grows below
  const auto rank = static_cast<int64_t>(shape.size()) + 1;
  const int64_t axis = normalizeAxis(intAttribute(node, "axis", -1), rank, label);
  // Negative indices count from the end: i + depth where i < 0.
  const int zero = constant("zero", ir::TensorValue::zeros({}, DType::kInt64));
  const int depth_tensor = constant("depth", ir::TensorValue{{}, DType::kInt64, {}, {depth}});
  const int wrapped =
      g.where(name + ".wrapped", g.compare(ir::CompareDirection::kLt, name + ".negative", indices, zero),
              g.add(name + ".from_end", indices, depth_tensor), indices);
  ir::Shape spread = shape;
  spread.insert(spread.begin() + axis, 1);
  ir::Shape along(static_cast<size_t>(rank), 1);
  along[static_cast<size_t>(axis)] = depth;
  ir::TensorValue positions{along, DType::kInt64, {}, {}};
  for (int64_t d = 0; d < depth; ++d) positions.ints.push_back(d);
  const int hit = g.compare(ir::CompareDirection::kEq, name + ".hit", g.reshape(name + ".spread", wrapped, spread),
                            constant("positions", std::move(positions)));
  const int flat = g.reshape(name + ".values", values, {2});
  const int off =
      g.reshape(name + ".off", g.slice(name + ".off_slice", flat, 0, 0, 1, ir::TensorRole::kActivation), {});
  const int on = g.reshape(name + ".on", g.slice(name + ".on_slice", flat, 0, 1, 1, ir::TensorRole::kActivation), {});
  define(node, g.where(name, hit, on, off));
}

}  // namespace tpusim::onnx_detail
