// ONNX activations and clamps that are compositions of IR ops (each of which has its CPU and
// CUDA kernels, its vector-unit cost and its gradient; a chain fuses into one kernel):
//   Softplus     log(e^x + 1)                      (as ONNX's reference computes it)
//   Softsign     x / (1 + |x|)
//   HardSigmoid  max(0, min(1, alpha x + beta))
//   HardSwish    x HardSigmoid(x) with alpha 1/6, beta 1/2
//   Mish         x tanh(Softplus(x))
//   Celu         alpha Elu(x / alpha) (Elu's alpha 1): max(0, x) + min(0, alpha (e^(x/alpha) - 1))
//   Clip         min(max(x, min), max), either bound optional
//   Max, Min     a chain of Maximum or Minimum over the inputs, broadcast
#include <limits>

#include "frontend/import/onnx_importer.hpp"

namespace tpusim::onnx_detail {

namespace {

bool isActivation(const std::string& type) {
  return type == "Softplus" || type == "Softsign" || type == "HardSigmoid" || type == "HardSwish" || type == "Mish" ||
         type == "Celu";
}

}  // namespace

bool Importer::importComposedActivation(const onnx::NodeProto& node, const std::string& label) {
  const std::string& type = node.op_type();
  if (!isActivation(type) && type != "Clip" && type != "Max" && type != "Min") return false;
  ir::Graph& g = m_result.graph;
  const std::string name = opName(node);
  if (type == "Max" || type == "Min") {
    expectInputCount(node, 1, std::numeric_limits<int>::max(), label);
    rejectAttributesExcept(node, {});
    int out = value(node.input(0), label);
    for (int i = 1; i < node.input_size(); ++i) {
      out = g.binary(type == "Max" ? ir::OpType::kMaximum : ir::OpType::kMinimum,
                     i + 1 == node.input_size() ? name : name + "." + std::to_string(i), out,
                     value(node.input(i), label));
    }
    define(node, node.input_size() == 1 ? g.reshape(name, out, g.tensor(out).shape) : out);
    return true;
  }
  const int x = value(node.input(0), label);
  const DType dtype = g.tensor(x).dtype;
  if (type == "Clip") {
    expectInputCount(node, 1, 3, label);
    rejectAttributesExcept(node, {});
    int out = x;
    const auto bound = [&](int index, ir::OpType op, const char* part) {
      if (node.input_size() <= index || node.input(index).empty()) return;
      const int limit = value(node.input(index), label);
      if (!g.tensor(limit).shape.empty()) invalid(label + ": Clip's " + part + " must be a scalar");
      if (g.tensor(limit).dtype != dtype) invalid(label + ": Clip's " + part + " has another type than its input");
      out = g.binary(op, name + "." + part, out, limit);
    };
    bound(1, ir::OpType::kMaximum, "min");
    bound(2, ir::OpType::kMinimum, "max");
    define(node, out == x ? g.reshape(name, x, g.tensor(x).shape) : out);
    return true;
  }
  expectInputs(node, 1, 1);
  if (!isFloatingDType(dtype)) invalid(label + ": " + type + " needs a float input");
  const auto constant = [&](const std::string& part, float v) { return scalarConstant(name + "." + part, dtype, v); };
  const auto softplus = [&](const std::string& part) {
    const int exp = g.unary(ir::UnaryKind::kExp, part + ".exp", x);
    return g.unary(ir::UnaryKind::kLog, part, g.add(part + ".plus_one", exp, constant("one", 1.0f)));
  };
  const auto hardSigmoid = [&](const std::string& part, float alpha, float beta) {
    const int line = g.add(part + ".line", g.scale(part + ".slope", x, alpha), constant("beta", beta));
    const int capped = g.binary(ir::OpType::kMinimum, part + ".capped", line, constant("one", 1.0f));
    return g.binary(ir::OpType::kMaximum, part, capped, constant("zero", 0.0f));
  };
  int out = -1;
  if (type == "Softplus") {
    rejectAttributesExcept(node, {});
    out = softplus(name);
  } else if (type == "Softsign") {
    rejectAttributesExcept(node, {});
    const int denominator =
        g.add(name + ".denominator", g.unary(ir::UnaryKind::kAbs, name + ".abs", x), constant("one", 1.0f));
    out = g.binary(ir::OpType::kDiv, name, x, denominator);
  } else if (type == "HardSigmoid") {
    rejectAttributesExcept(node, {"alpha", "beta"});
    out = hardSigmoid(name, floatAttribute(node, "alpha", 0.2f), floatAttribute(node, "beta", 0.5f));
  } else if (type == "HardSwish") {
    rejectAttributesExcept(node, {});
    out = g.binary(ir::OpType::kMul, name, x, hardSigmoid(name + ".gate", 1.0f / 6.0f, 0.5f));
  } else if (type == "Mish") {
    rejectAttributesExcept(node, {});
    out = g.binary(ir::OpType::kMul, name, x,
                   g.unary(ir::UnaryKind::kTanh, name + ".tanh", softplus(name + ".softplus")));
  } else {  // Celu
    rejectAttributesExcept(node, {"alpha"});
    const float alpha = floatAttribute(node, "alpha", 1.0f);
    if (alpha == 0.0f) invalid(label + ": Celu's alpha must not be 0");
    const int elu = g.unary(ir::UnaryKind::kElu, name + ".elu", g.scale(name + ".scaled", x, 1.0 / alpha), 1.0);
    out = g.scale(name, elu, alpha);
  }
  define(node, out);
  return true;
}

}  // namespace tpusim::onnx_detail
