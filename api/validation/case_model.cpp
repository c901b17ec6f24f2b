#include "api/validation/case_model.hpp"

#include "sim/common/error.hpp"

namespace tpusim {

namespace {

// The opset of the built models: ReduceMean still takes its axes as an attribute.
constexpr int64_t kOpset = 17;
// The epsilon of flax's LayerNorm and RMSNorm and of jax.nn.standardize.
constexpr float kNormEpsilon = 1e-6f;

int32_t onnxType(const std::string& dtype, const MeasuredCase& c) {
  if (dtype == "float32") return onnx::TensorProto::FLOAT;
  if (dtype == "float16") return onnx::TensorProto::FLOAT16;
  if (dtype == "bfloat16") return onnx::TensorProto::BFLOAT16;
  throw Error(ErrorKind::kUnsupported, caseLabel(c) + ": dtype '" + dtype + "' (float32, float16 or bfloat16)");
}

class ModelBuilder {
 public:
  ModelBuilder() {
    m_model.set_ir_version(8);
    auto* import = m_model.add_opset_import();
    import->set_domain("");
    import->set_version(kOpset);
    m_model.mutable_graph()->set_name("case");
  }
  std::string input(const std::string& name, const std::vector<int64_t>& shape, int32_t type) {
    auto* value = m_model.mutable_graph()->add_input();
    value->set_name(name);
    auto* tensor = value->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(type);
    for (int64_t d : shape) tensor->mutable_shape()->add_dim()->set_dim_value(d);
    return name;
  }
  // A weight whose values do not change the timing: its shape only.
  std::string weight(const std::string& name, const std::vector<int64_t>& shape, int32_t type) {
    auto* init = m_model.mutable_graph()->add_initializer();
    init->set_name(name);
    init->set_data_type(type);
    for (int64_t d : shape) init->add_dims(d);
    return name;
  }
  // A scalar constant of `type`, from a float.
  std::string scalar(const std::string& name, float value, int32_t type) {
    onnx::NodeProto& node = add("Constant", {}, name);
    auto* attr = node.add_attribute();
    attr->set_name("value");
    attr->set_type(onnx::AttributeProto::TENSOR);
    onnx::TensorProto* t = attr->mutable_t();
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(value);
    if (type == onnx::TensorProto::FLOAT) return name;
    onnx::NodeProto& cast = add("Cast", {name}, name + "_cast");
    intAttr(cast, "to", type);
    return name + "_cast";
  }
  onnx::NodeProto& add(const std::string& op, const std::vector<std::string>& inputs, const std::string& output) {
    auto* node = m_model.mutable_graph()->add_node();
    node->set_op_type(op);
    node->set_name(output);
    for (const std::string& in : inputs) node->add_input(in);
    node->add_output(output);
    return *node;
  }
  static void intAttr(onnx::NodeProto& node, const std::string& name, int64_t value) {
    auto* attr = node.add_attribute();
    attr->set_name(name);
    attr->set_type(onnx::AttributeProto::INT);
    attr->set_i(value);
  }
  static void intsAttr(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values) {
    auto* attr = node.add_attribute();
    attr->set_name(name);
    attr->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : values) attr->add_ints(v);
  }
  static void floatAttr(onnx::NodeProto& node, const std::string& name, float value) {
    auto* attr = node.add_attribute();
    attr->set_name(name);
    attr->set_type(onnx::AttributeProto::FLOAT);
    attr->set_f(value);
  }
  onnx::ModelProto finish(const std::string& output) {
    m_model.mutable_graph()->add_output()->set_name(output);
    return std::move(m_model);
  }

 private:
  onnx::ModelProto m_model;
};

std::vector<int64_t> normAxes(const MeasuredCase& c) {
  const auto rank = static_cast<int64_t>(c.shape.size());
  std::vector<int64_t> axes = c.axis.empty() ? std::vector<int64_t>{rank - 1} : c.axis;
  for (int64_t& a : axes) {
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) throw Error(ErrorKind::kInvalidInput, caseLabel(c) + ": an axis is out of range");
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] != rank - static_cast<int64_t>(axes.size() - i)) {
      throw Error(ErrorKind::kUnsupported, caseLabel(c) + ": norms over axes other than the trailing ones");
    }
  }
  return axes;
}

// x in the norm's dtype: a cast where the output's dtype differs from the input's.
std::string normInput(ModelBuilder& b, const std::string& x, const MeasuredCase& c, int32_t& type) {
  const int32_t in = type;
  if (!c.out_dtype.empty()) type = onnxType(c.out_dtype, c);
  if (type == in) return x;
  onnx::NodeProto& cast = b.add("Cast", {x}, "x_cast");
  ModelBuilder::intAttr(cast, "to", type);
  return "x_cast";
}

}  // namespace

onnx::ModelProto caseModel(const MeasuredCase& c) {
  ModelBuilder b;
  int32_t type = onnxType(c.dtype, c);
  const std::string& op = c.op;
  if (op == "matmul") {
    if (c.shape.size() != 3) throw Error(ErrorKind::kInvalidInput, caseLabel(c) + ": a matmul needs M, K, N");
    const std::string a = b.input("a", {c.shape[0], c.shape[1]}, type);
    const std::string w = b.input("b", {c.shape[1], c.shape[2]}, type);
    b.add("MatMul", {a, w}, "out");
    return b.finish("out");
  }
  const std::string x = b.input("x", c.shape, type);
  static const std::map<std::string, std::string> kBinary = {
      {"add", "Add"}, {"sub", "Sub"}, {"mul", "Mul"}, {"div", "Div"}};
  static const std::map<std::string, std::string> kUnary = {
      {"relu", "Relu"}, {"sigmoid", "Sigmoid"}, {"tanh", "Tanh"}, {"elu", "Elu"}, {"selu", "Selu"}};
  if (const auto binary = kBinary.find(op); binary != kBinary.end()) {
    b.add(binary->second, {x, b.input("y", c.shape, type)}, "out");
  } else if (const auto unary = kUnary.find(op); unary != kUnary.end()) {
    b.add(unary->second, {x}, "out");
  } else if (op == "leaky_relu") {
    ModelBuilder::floatAttr(b.add("LeakyRelu", {x}, "out"), "alpha", 0.01f);
  } else if (op == "parametric_relu") {
    b.add("PRelu", {x, b.weight("slope", {1}, type)}, "out");
  } else if (op == "binary_step") {
    const std::string step = b.add("GreaterOrEqual", {x, b.scalar("zero", 0.0f, type)}, "step").output(0);
    ModelBuilder::intAttr(b.add("Cast", {step}, "out"), "to", onnx::TensorProto::FLOAT);
  } else if (op == "linear") {
    const std::string scaled = b.add("Mul", {x, b.scalar("one", 1.0f, type)}, "scaled").output(0);
    b.add("Add", {scaled, b.scalar("zero", 0.0f, type)}, "out");
  } else if (op == "layer_norm") {
    const std::vector<int64_t> axes = normAxes(c);
    const std::string xn = normInput(b, x, c, type);
    const std::vector<int64_t> normalized(c.shape.begin() + axes.front(), c.shape.end());
    onnx::NodeProto& norm =
        b.add("LayerNormalization", {xn, b.weight("scale", normalized, type), b.weight("bias", normalized, type)}, "out");
    ModelBuilder::intAttr(norm, "axis", axes.front());
    ModelBuilder::floatAttr(norm, "epsilon", kNormEpsilon);
  } else if (op == "rms_norm") {
    const std::vector<int64_t> axes = normAxes(c);
    const std::string xn = normInput(b, x, c, type);
    const std::vector<int64_t> normalized(c.shape.begin() + axes.front(), c.shape.end());
    const std::string squares = b.add("Mul", {xn, xn}, "squares").output(0);
    onnx::NodeProto& mean = b.add("ReduceMean", {squares}, "mean_square");
    ModelBuilder::intsAttr(mean, "axes", axes);
    const std::string shifted = b.add("Add", {"mean_square", b.scalar("epsilon", kNormEpsilon, type)}, "shifted").output(0);
    const std::string rms = b.add("Sqrt", {shifted}, "rms").output(0);
    const std::string normed = b.add("Div", {xn, rms}, "normalized").output(0);
    b.add("Mul", {normed, b.weight("scale", normalized, type)}, "out");
  } else if (op == "batch_norm_inference") {
    if (c.shape.size() != 4) throw Error(ErrorKind::kInvalidInput, caseLabel(c) + ": batch norm needs NCHW");
    const std::string xn = normInput(b, x, c, type);
    const std::vector<int64_t> channels = {c.shape[1]};
    b.add("BatchNormalization",
          {xn, b.weight("scale", channels, type), b.weight("bias", channels, type), b.weight("mean", channels, type),
           b.weight("var", channels, type)},
          "out");
  } else if (op == "max_pool" || op == "avg_pool") {
    if (c.shape.size() != 4) throw Error(ErrorKind::kInvalidInput, caseLabel(c) + ": pooling needs NCHW");
    const std::vector<int64_t> window = c.window.empty() ? std::vector<int64_t>{2, 2} : c.window;
    const std::vector<int64_t> strides = c.strides.empty() ? window : c.strides;
    if (window.size() != 2 || strides.size() != 2) {
      throw Error(ErrorKind::kInvalidInput, caseLabel(c) + ": pooling needs a 2-D window and strides");
    }
    onnx::NodeProto& pool = b.add(op == "max_pool" ? "MaxPool" : "AveragePool", {x}, "out");
    ModelBuilder::intsAttr(pool, "kernel_shape", window);
    ModelBuilder::intsAttr(pool, "strides", strides);
    if (c.padding == "SAME") {
      auto* attr = pool.add_attribute();
      attr->set_name("auto_pad");
      attr->set_type(onnx::AttributeProto::STRING);
      attr->set_s("SAME_UPPER");
    } else if (c.padding != "VALID") {
      throw Error(ErrorKind::kInvalidInput, caseLabel(c) + ": padding '" + c.padding + "' (VALID or SAME)");
    }
  } else {
    std::string known;
    for (const auto& [name, what] : measuredOps()) known += (known.empty() ? "" : ", ") + name;
    throw Error(ErrorKind::kUnsupported, caseLabel(c) + ": unknown op '" + op + "' (known: " + known + ")");
  }
  return b.finish("out");
}

}  // namespace tpusim
