// Elementwise ONNX ops that are compositions of IR ops (each of which has its CPU and CUDA
// kernels, its vector-unit cost and its gradient; a chain fuses into one kernel):
//   Sum, Mean                     a chain of Adds over the inputs (broadcast); Mean then scales by 1/n
//   ThresholdedRelu               x > alpha ? x : 0
//   Shrink                        x < -lambd ? x + bias : (x > lambd ? x - bias : 0)
//   IsNaN                         x != x
//   IsInf                         x == +inf or x == -inf (as detect_positive and detect_negative ask)
//   CastLike                      Cast to the second input's type
//   MeanVarianceNormalization     (x - E[x]) / sqrt(E[(x - E[x])^2] + 1e-9) over `axes`
//   LpNormalization               x / sum(abs(x)) (p 1) or x / sqrt(sum(x^2)) (p 2) along `axis`
#include <limits>

#include "frontend/import/onnx_importer.hpp"

namespace tpusim::onnx_detail {

bool Importer::importElementwise(const onnx::NodeProto& node, const std::string& label) {
  const std::string& type = node.op_type();
  if (type != "Sum" && type != "Mean" && type != "ThresholdedRelu" && type != "Shrink" && type != "IsNaN" &&
      type != "IsInf" && type != "CastLike" && type != "MeanVarianceNormalization" && type != "LpNormalization") {
    return false;
  }
  ir::Graph& g = m_result.graph;
  const std::string name = opName(node);
  const int x = value(node.input(0), label);
  const DType dtype = g.tensor(x).dtype;
  const auto constant = [&](const std::string& part, double v) {
    ir::TensorValue scalar = ir::TensorValue::zeros({}, dtype);
    if (ir::TensorValue::isFloating(dtype)) {
      scalar.floats[0] = v;
    } else {
      scalar.ints[0] = static_cast<int64_t>(v);
    }
    return constantTensor(name + "." + part, std::move(scalar));
  };
  int out = -1;
  if (type == "Sum" || type == "Mean") {
    expectInputCount(node, 1, std::numeric_limits<int>::max(), label);
    rejectAttributesExcept(node, {});
    const bool mean = type == "Mean";
    out = x;
    for (int i = 1; i < node.input_size(); ++i) {
      const bool last = i + 1 == node.input_size() && !mean;
      out = g.add(last ? name : name + "." + std::to_string(i), out, value(node.input(i), label));
    }
    if (mean) {
      if (!isFloatingDType(dtype)) invalid(label + ": Mean needs float inputs");
      out = g.scale(name, out, 1.0 / node.input_size());
    } else if (node.input_size() == 1) {
      out = g.reshape(name, x, g.tensor(x).shape);
    }
  } else if (type == "ThresholdedRelu") {
    expectInputs(node, 1, 1);
    rejectAttributesExcept(node, {"alpha"});
    if (!isFloatingDType(dtype)) invalid(label + ": ThresholdedRelu needs a float input");
    const int above = g.compare(ir::CompareDirection::kGt, name + ".above", x,
                                constant("alpha", floatAttribute(node, "alpha", 1.0f)));
    out = g.where(name, above, x, constant("zero", 0));
  } else if (type == "Shrink") {
    expectInputs(node, 1, 1);
    rejectAttributesExcept(node, {"bias", "lambd"});
    if (dtype == DType::kBool) invalid(label + ": Shrink needs numbers");
    const float lambd = floatAttribute(node, "lambd", 0.5f), bias = floatAttribute(node, "bias", 0.0f);
    const int below = g.compare(ir::CompareDirection::kLt, name + ".below", x, constant("minus_lambd", -lambd));
    const int above = g.compare(ir::CompareDirection::kGt, name + ".above", x, constant("lambd", lambd));
    const int bias_value = constant("bias", bias);
    const int upper = g.where(name + ".upper", above, g.binary(ir::OpType::kSub, name + ".lowered", x, bias_value),
                              constant("zero", 0));
    out = g.where(name, below, g.add(name + ".raised", x, bias_value), upper);
  } else if (type == "IsNaN" || type == "IsInf") {
    expectInputs(node, 1, 1);
    rejectAttributesExcept(
        node, type == "IsInf" ? std::set<std::string>{"detect_negative", "detect_positive"} : std::set<std::string>{});
    if (!isFloatingDType(dtype)) invalid(label + ": " + type + " needs a float input");
    if (type == "IsNaN") {
      out = g.compare(ir::CompareDirection::kNe, name, x, x);
    } else {
      const bool negative = intAttribute(node, "detect_negative", 1) != 0;
      const bool positive = intAttribute(node, "detect_positive", 1) != 0;
      const double inf = std::numeric_limits<double>::infinity();
      if (negative && positive) {
        out = g.compare(ir::CompareDirection::kEq, name, g.unary(ir::UnaryKind::kAbs, name + ".abs", x),
                        constant("inf", inf));
      } else if (negative || positive) {
        out = g.compare(ir::CompareDirection::kEq, name, x, constant("inf", positive ? inf : -inf));
      } else {
        out = g.compare(ir::CompareDirection::kLt, name, x, constant("inf", -inf));  // false for every x
      }
    }
  } else if (type == "CastLike") {
    expectInputs(node, 2, 2);
    rejectAttributesExcept(node, {"saturate"});
    out = g.cast(name, x, g.tensor(value(node.input(1), label)).dtype);
  } else if (type == "LpNormalization") {
    expectInputs(node, 1, 1);
    rejectAttributesExcept(node, {"axis", "p"});
    if (!isFloatingDType(dtype)) invalid(label + ": LpNormalization needs a float input");
    const auto rank = static_cast<int64_t>(g.tensor(x).shape.size());
    const int64_t axis = normalizeAxis(intAttribute(node, "axis", -1), rank, label);
    const int64_t p = intAttribute(node, "p", 2);
    if (p != 1 && p != 2) invalid(label + ": LpNormalization's p must be 1 or 2");
    const int terms =
        p == 1 ? g.unary(ir::UnaryKind::kAbs, name + ".abs", x) : g.binary(ir::OpType::kMul, name + ".squares", x, x);
    int norm = g.reduce(name + ".sum", terms, ir::Reduction::kSum, {axis}, true);
    if (p == 2) norm = g.unary(ir::UnaryKind::kSqrt, name + ".norm", norm);
    out = g.binary(ir::OpType::kDiv, name, x, norm);
  } else {  // MeanVarianceNormalization
    expectInputs(node, 1, 1);
    rejectAttributesExcept(node, {"axes"});
    if (!isFloatingDType(dtype)) invalid(label + ": MeanVarianceNormalization needs a float input");
    const auto rank = static_cast<int64_t>(g.tensor(x).shape.size());
    std::vector<int64_t> axes = intsAttribute(node, "axes", {0, 2, 3});
    for (int64_t& axis : axes) axis = normalizeAxis(axis, rank, label);
    out = normalized(name, x, axes, 1e-9f).y;
  }
  define(node, out);
  return true;
}

}  // namespace tpusim::onnx_detail
