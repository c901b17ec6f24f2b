#include "frontend/import/onnx_import.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include <onnx/onnx_pb.h>

#include "frontend/import/onnx_importer.hpp"
#include "frontend/import/onnx_tensor.hpp"
#include "sim/common/error.hpp"

namespace tpusim::onnx_detail {

namespace {

// UTF-8 as RFC 3629 defines it: no overlong forms, surrogates or code points above U+10FFFF.
bool isUtf8(const std::string& text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const size_t extra = lead < 0x80                    ? 0
                         : lead >= 0xC2 && lead <= 0xDF ? 1
                         : lead >= 0xE0 && lead <= 0xEF ? 2
                         : lead >= 0xF0 && lead <= 0xF4 ? 3
                                                        : 4;
    if (extra == 4 || i + extra >= text.size()) return false;
    uint32_t code = extra == 0 ? lead : lead & (0x3F >> extra);
    for (size_t k = 1; k <= extra; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      code = (code << 6) | (next & 0x3F);
    }
    if ((extra == 2 && (code < 0x800 || (code >= 0xD800 && code <= 0xDFFF))) ||
        (extra == 3 && (code < 0x10000 || code > 0x10FFFF)))
      return false;
    i += extra + 1;
  }
  return true;
}

// Names reach messages, reports and the Program (whose protobuf strings must be UTF-8);
// a name that is not is a corrupted file. The message does not echo the bytes.
void checkNames(const onnx::GraphProto& graph) {
  auto check = [](const std::string& text, const char* what, const char* where, int index) {
    if (isUtf8(text)) return;
    std::string message = "the ";
    message.append(what).append(" of ").append(where).append(" #").append(std::to_string(index));
    message.append(" is not valid UTF-8 (a corrupted file?)");
    invalid(message);
  };
  for (int i = 0; i < graph.initializer_size(); ++i) check(graph.initializer(i).name(), "name", "initializer", i);
  for (int i = 0; i < graph.input_size(); ++i) check(graph.input(i).name(), "name", "graph input", i);
  for (int i = 0; i < graph.output_size(); ++i) check(graph.output(i).name(), "name", "graph output", i);
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    check(node.name(), "name", "node", i);
    check(node.op_type(), "op type", "node", i);
    check(node.domain(), "domain", "node", i);
    for (const auto& input : node.input()) check(input, "input name", "node", i);
    for (const auto& output : node.output()) check(output, "output name", "node", i);
  }
}

}  // namespace

ImportedModel Importer::run() {
  checkOpset();
  const onnx::GraphProto& graph = m_model.graph();
  checkNames(graph);
  for (const auto& init : graph.initializer()) addInitializer(init);
  for (const auto& input : graph.input()) {
    if (m_values.count(input.name())) continue;
    auto known = m_known.find(input.name());
    if (known != m_known.end()) {
      m_values[input.name()] = m_result.graph.addConstant(input.name(), known->second.shape, known->second.dtype);
      m_result.initializers.emplace(input.name(), known->second);
    } else {
      addGraphInput(input);
    }
  }
  for (const auto& node : graph.node()) importNode(node);
  chooseWeightInits();
  if (graph.output_size() == 0) invalid("the graph has no outputs");
  for (const auto& output : graph.output()) {
    if (output.name().empty()) invalid("a graph output has no name");
    m_result.graph.markOutput(value(output.name(), "graph output '" + output.name() + "'"));
  }
  m_result.batch = m_batch;
  return std::move(m_result);
}

void Importer::checkOpset() {
  int64_t opset = -1;
  for (const auto& import : m_model.opset_import()) {
    if (import.domain().empty() || import.domain() == "ai.onnx") opset = import.version();
  }
  if (opset < 0) {
    // A graph of training ops alone (ai.onnx.preview.training) needs no default-domain opset.
    const auto& nodes = m_model.graph().node();
    if (!nodes.empty() && std::all_of(nodes.begin(), nodes.end(), isTrainingOp)) return;
    invalid("the model imports no default-domain opset");
  }
  if (opset > kNewestOnnxOpset) {
    std::string message = "opset ";
    message.append(std::to_string(opset)).append(" is newer than ").append(std::to_string(kNewestOnnxOpset));
    message.append(", the newest tpusim knows (re-export with an older opset)");
    throw Error(ErrorKind::kUnsupported, message);
  }
  if (opset < kOldestOnnxOpset) {
    throw Error(ErrorKind::kUnsupported, "opset " + std::to_string(opset) + " is older than " +
                                             std::to_string(kOldestOnnxOpset) +
                                             ", the oldest tpusim reads (re-export with a newer opset)");
  }
}

void Importer::addInitializer(const onnx::TensorProto& init) {
  if (m_values.count(init.name())) invalid("initializer '" + init.name() + "' is defined twice");
  ir::Shape shape(init.dims().begin(), init.dims().end());
  const DType dtype = fromOnnxType(init.data_type(), "initializer '" + init.name() + "'");
  m_values[init.name()] = m_result.graph.addWeight(init.name(), shape, dtype);
  // A shape-only trace keeps an initializer's shape but not its values: timing needs
  // no values, and the reference executor then asks for them by name.
  const bool shape_only = !init.has_raw_data() && init.float_data_size() == 0 && init.int32_data_size() == 0 &&
                          init.int64_data_size() == 0 && init.double_data_size() == 0 && elementCountOf(init) > 0;
  if (shape_only) {
    m_result.shape_only_weights = true;
    m_shape_only[init.name()] = shape;
  } else {
    m_result.initializers.emplace(init.name(), decodeOnnxTensor(init));
  }
}

bool Importer::isInitializerWeight(const std::string& name, int tensor) const {
  const ir::Graph& g = m_result.graph;
  return g.producer(tensor) == nullptr && g.tensor(tensor).role == ir::TensorRole::kWeight &&
         (m_result.initializers.count(name) || m_shape_only.count(name));
}

// torch.onnx.export keeps one initializer of several with equal values (a BatchNormalization's
// zero means, its unit scales) and gives the others as Identity nodes of it. They are separate
// parameters in the model: each Identity becomes a weight of its own, with the same values,
// trained (or frozen) on its own.
int Importer::copyOfWeight(const std::string& source, const std::string& name) {
  const ir::Tensor tensor = m_result.graph.tensor(m_values.at(source));  // a copy: addWeight may move the tensors
  const int copy = m_result.graph.addWeight(name, tensor.shape, tensor.dtype);
  if (const auto values = m_result.initializers.find(source); values != m_result.initializers.end()) {
    m_result.initializers.emplace(name, values->second);
  } else {
    m_shape_only[name] = tensor.shape;
  }
  return copy;
}

void Importer::chooseWeightInits() {
  for (const auto& node : m_model.graph().node()) {
    for (int i = 0; i < node.input_size(); ++i) {
      const auto weight = m_shape_only.find(node.input(i));
      if (weight == m_shape_only.end() || m_result.weight_inits.count(weight->first)) continue;
      bool trans_b = false;
      for (const auto& attr : node.attribute()) trans_b = trans_b || (attr.name() == "transB" && attr.i() != 0);
      m_result.weight_inits[weight->first] = weightInitFor(node.op_type(), i, weight->second, trans_b);
    }
  }
  for (const auto& [name, shape] : m_shape_only) {
    if (!m_result.weight_inits.count(name)) m_result.weight_inits[name] = weightInitFor("", -1, shape, false);
  }
}

void Importer::addGraphInput(const onnx::ValueInfoProto& input) {
  const std::string what = "graph input '" + input.name() + "'";
  if (input.name().empty()) invalid("a graph input has no name");
  if (!input.has_type() || input.type().value_case() == onnx::TypeProto::VALUE_NOT_SET) invalid(what + " has no type");
  if (!input.type().has_tensor_type()) throw Error(ErrorKind::kUnsupported, what + " is not a tensor");
  const auto& tensor_type = input.type().tensor_type();
  if (tensor_type.elem_type() == onnx::TensorProto::UNDEFINED) invalid(what + " has no element type");
  if (!tensor_type.has_shape()) invalid(what + " has no shape");
  ir::Shape shape;
  for (int i = 0; i < tensor_type.shape().dim_size(); ++i) {
    const auto& dim = tensor_type.shape().dim(i);
    if (dim.has_dim_value()) {
      shape.push_back(dim.dim_value());
    } else if (i == 0) {
      shape.push_back(m_batch);  // symbolic batch dimension
    } else {
      throw Error(ErrorKind::kUnsupported, what + " has a symbolic dimension " + std::to_string(i) + " ('" +
                                               dim.dim_param() + "'); only the leading (batch) one may be");
    }
  }
  // The first graph input's leading dimension is the batch; a fixed one wins
  // over the default but must agree with an explicit --batch.
  if (m_first_input && !shape.empty() && tensor_type.shape().dim(0).has_dim_value()) {
    if (m_batch_requested && shape[0] != m_batch) {
      throw Error(ErrorKind::kInvalidConfig, "batch " + std::to_string(m_batch) + " was requested but " + what +
                                                 " has a fixed batch dimension of " + std::to_string(shape[0]));
    }
    m_batch = shape[0];
  }
  m_first_input = false;
  const DType dtype = fromOnnxType(tensor_type.elem_type(), what);
  const bool is_label = dtype == DType::kInt64 || dtype == DType::kInt32;
  m_values[input.name()] =
      m_result.graph.addInput(input.name(), shape, dtype, is_label ? ir::TensorRole::kLabel : ir::TensorRole::kInput);
}

int Importer::value(const std::string& name, const std::string& user) {
  if (name.empty()) invalid(user + " leaves a required input unnamed (an empty input name)");
  auto it = m_values.find(name);
  if (it != m_values.end()) return it->second;
  auto constant = m_constants.find(name);
  if (constant == m_constants.end()) {
    invalid(user + " uses '" + name +
            "', which no earlier node produces (the graph is cyclic, not in topological order, or incomplete)");
  }
  const int id = m_result.graph.addConstant(name, constant->second.shape, constant->second.dtype);
  m_result.initializers.emplace(name, constant->second);
  m_values[name] = id;
  return id;
}

const ir::TensorValue* Importer::constantValue(const std::string& name) const {
  auto constant = m_constants.find(name);
  if (constant != m_constants.end()) return &constant->second;
  auto init = m_result.initializers.find(name);
  auto tensor = m_values.find(name);
  if (init == m_result.initializers.end() || tensor == m_values.end()) return nullptr;
  // A float initializer is a weight (trained), not a constant; integers are shapes and indices.
  const bool constant_role = m_result.graph.tensor(tensor->second).role == ir::TensorRole::kConstant;
  return constant_role || !ir::TensorValue::isFloating(init->second.dtype) ? &init->second : nullptr;
}

void Importer::defineConstant(const onnx::NodeProto& node, int index, ir::TensorValue value) {
  const std::string& name = node.output(index);
  if (name.empty()) return;
  if (m_values.count(name) || m_constants.count(name)) invalid(nodeLabel(node) + " redefines value '" + name + "'");
  m_constants.emplace(name, std::move(value));
}

ir::Shape Importer::shapeOf(const std::string& name, const std::string& user) const {
  auto constant = m_constants.find(name);
  if (constant != m_constants.end()) return constant->second.shape;
  auto it = m_values.find(name);
  if (it == m_values.end()) invalid(user + " uses '" + name + "', which no earlier node produces");
  return m_result.graph.tensor(it->second).shape;
}

void Importer::define(const onnx::NodeProto& node, int tensor) {
  if (node.output_size() != 1)
    throw Error(ErrorKind::kUnsupported, nodeLabel(node) + ": only single-output nodes are supported");
  defineOutput(node, 0, tensor);
}

void Importer::defineOutput(const onnx::NodeProto& node, int index, int tensor) {
  const std::string& name = node.output(index);
  if (name.empty()) return;  // an optional output the model does not use
  if (m_values.count(name) || m_constants.count(name)) invalid(nodeLabel(node) + " redefines value '" + name + "'");
  m_result.graph.rename(tensor, name);
  m_values[name] = tensor;
}

std::vector<int64_t> Importer::constantInts(const onnx::NodeProto& node, int index, const std::string& label) const {
  const std::string& name = node.input(index);
  const ir::TensorValue* constant = constantValue(name);
  if (constant == nullptr || ir::TensorValue::isFloating(constant->dtype)) {
    throw Error(ErrorKind::kUnsupported, label + ": input '" + name +
                                             "' must be a constant integer tensor (an initializer or a Constant): "
                                             "tpusim compiles static shapes");
  }
  return constant->ints;
}

int64_t Importer::normalizeAxis(int64_t axis, int64_t rank, const std::string& label) {
  if (axis < -rank || axis >= rank) {
    throw Error(ErrorKind::kInvalidInput,
                label + ": axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

void Importer::expectInputCount(const onnx::NodeProto& node, int min, int max, const std::string& label) {
  if (node.input_size() < min || node.input_size() > max) {
    throw Error(ErrorKind::kInvalidInput, label + " has " + std::to_string(node.input_size()) + " inputs, expected " +
                                              std::to_string(min) + (min == max ? "" : " to " + std::to_string(max)));
  }
}

std::optional<ir::UnaryKind> Importer::unaryKind(const std::string& type) {
  static const std::map<std::string, ir::UnaryKind> kKinds = {
      {"Abs", ir::UnaryKind::kAbs},         {"Erf", ir::UnaryKind::kErf},
      {"Exp", ir::UnaryKind::kExp},         {"Log", ir::UnaryKind::kLog},
      {"Neg", ir::UnaryKind::kNeg},         {"Reciprocal", ir::UnaryKind::kReciprocal},
      {"Sigmoid", ir::UnaryKind::kSigmoid}, {"Sqrt", ir::UnaryKind::kSqrt},
      {"Tanh", ir::UnaryKind::kTanh},       {"Floor", ir::UnaryKind::kFloor},
      {"Ceil", ir::UnaryKind::kCeil},       {"Sign", ir::UnaryKind::kSign},
      {"Round", ir::UnaryKind::kRound},     {"Sin", ir::UnaryKind::kSin},
      {"Cos", ir::UnaryKind::kCos},         {"Tan", ir::UnaryKind::kTan},
      {"Asin", ir::UnaryKind::kAsin},       {"Acos", ir::UnaryKind::kAcos},
      {"Atan", ir::UnaryKind::kAtan},       {"Sinh", ir::UnaryKind::kSinh},
      {"Cosh", ir::UnaryKind::kCosh},       {"Asinh", ir::UnaryKind::kAsinh},
      {"Acosh", ir::UnaryKind::kAcosh},     {"Atanh", ir::UnaryKind::kAtanh},
  };
  auto it = kKinds.find(type);
  if (it == kKinds.end()) return std::nullopt;
  return it->second;
}

std::optional<ir::CompareDirection> Importer::compareDirection(const std::string& type) {
  static const std::map<std::string, ir::CompareDirection> kDirections = {
      {"Equal", ir::CompareDirection::kEq},          {"Less", ir::CompareDirection::kLt},
      {"LessOrEqual", ir::CompareDirection::kLe},    {"Greater", ir::CompareDirection::kGt},
      {"GreaterOrEqual", ir::CompareDirection::kGe},
  };
  auto it = kDirections.find(type);
  if (it == kDirections.end()) return std::nullopt;
  return it->second;
}

void Importer::importConstant(const onnx::NodeProto& node, const std::string& label) {
  if (node.attribute_size() != 1) invalid(label + " needs exactly one value attribute");
  const onnx::AttributeProto& attr = node.attribute(0);
  ir::TensorValue value;
  if (attr.name() == "value") {
    value = decodeOnnxTensor(attr.t());
  } else if (attr.name() == "value_float") {
    value = ir::TensorValue{{}, DType::kF32, {attr.f()}, {}};
  } else if (attr.name() == "value_floats") {
    value = ir::TensorValue{{attr.floats_size()}, DType::kF32, {attr.floats().begin(), attr.floats().end()}, {}};
  } else if (attr.name() == "value_int") {
    value = ir::TensorValue{{}, DType::kInt64, {}, {attr.i()}};
  } else if (attr.name() == "value_ints") {
    value = ir::TensorValue{{attr.ints_size()}, DType::kInt64, {}, {attr.ints().begin(), attr.ints().end()}};
  } else {
    throw Error(ErrorKind::kUnsupported, label + ": a Constant's '" + attr.name() + "' is not supported yet");
  }
  if (node.output_size() != 1) invalid(label + " must have one output");
  defineConstant(node, 0, std::move(value));
}

void Importer::importLoss(const onnx::NodeProto& node, const std::string& label, bool with_softmax) {
  expectInputs(node, 2, 3);
  rejectAttributesExcept(node, {"reduction", "ignore_index"});
  const auto* reduction_attr = attribute(node, "reduction");
  const std::string reduction_name = reduction_attr ? reduction_attr->s() : "mean";
  ir::Reduction reduction = ir::Reduction::kMean;
  if (reduction_name == "none") {
    reduction = ir::Reduction::kNone;
  } else if (reduction_name == "sum") {
    reduction = ir::Reduction::kSum;
  } else if (reduction_name != "mean") {
    invalid(label + ": unknown reduction '" + reduction_name + "' (none, sum or mean)");
  }
  std::optional<int64_t> ignore_index;
  if (const auto* ignore = attribute(node, "ignore_index")) ignore_index = ignore->i();
  const bool has_weights = node.input_size() == 3 && !node.input(2).empty();
  const int max_outputs = with_softmax ? 2 : 1;
  if (node.output_size() < 1 || node.output_size() > max_outputs) invalid(label + " has a wrong number of outputs");
  ir::Graph& g = m_result.graph;
  const std::string name = opName(node);
  const int scores = value(node.input(0), label);
  const int labels = value(node.input(1), label);
  const bool log_prob_wanted = node.output_size() == 2 && !node.output(1).empty();
  // The common case stays one fused op, which training can differentiate.
  if (with_softmax && !has_weights && !ignore_index && reduction == ir::Reduction::kMean && !log_prob_wanted &&
      g.tensor(scores).shape.size() == 2) {
    defineOutput(node, 0, g.softmaxCrossEntropy(name, scores, labels));
  } else {
    const int logp = with_softmax ? g.softmax(name + ".log_softmax", scores, 1, true) : scores;
    const int weights = has_weights ? value(node.input(2), label) : -1;
    defineOutput(node, 0, g.nllLoss(name, logp, labels, weights, reduction, ignore_index));
    if (log_prob_wanted) defineOutput(node, 1, logp);
  }
  m_result.has_loss = true;
}

void Importer::expectInputs(const onnx::NodeProto& node, int min, int max) {
  if (node.input_size() < min || node.input_size() > max) {
    invalid(nodeLabel(node) + " has " + std::to_string(node.input_size()) + " inputs, expected " +
            (min == max ? std::to_string(min) : std::to_string(min) + " to " + std::to_string(max)));
  }
}

std::string Importer::opName(const onnx::NodeProto& node) {
  return node.name().empty() ? node.op_type() + "_" + std::to_string(m_unnamed++) : node.name();
}

void Importer::importNode(const onnx::NodeProto& node) {
  if (isTrainingOp(node)) return importTrainingOp(node, nodeLabel(node));
  if (!node.domain().empty() && node.domain() != "ai.onnx") {
    throw Error(ErrorKind::kUnsupported, nodeLabel(node) + ": domain '" + node.domain() + "' is not supported");
  }
  const std::string& type = node.op_type();
  const std::string label = nodeLabel(node);
  if (type.empty()) invalid(label + " has no op type");
  if (node.output_size() == 0) invalid(label + " has no outputs");
  if (node.input_size() == 0 && type != "Constant") invalid(label + " has no inputs");
  ir::Graph& g = m_result.graph;
  try {
    if (foldNode(node, label)) return;
    if (type == "Gemm") {
      expectInputs(node, 2, 3);
      rejectAttributesExcept(node, {"alpha", "beta", "transA", "transB"});
      const std::string name = opName(node);
      const float alpha = floatAttribute(node, "alpha", 1.0f);
      const float beta = floatAttribute(node, "beta", 1.0f);
      const int a = value(node.input(0), label);
      const int b = value(node.input(1), label);
      if (g.tensor(a).shape.size() != 2 || g.tensor(b).shape.size() != 2) invalid(label + ": Gemm needs 2-D A and B");
      // Y = alpha op(A) op(B) + beta C, C broadcast to [M, N].
      int out = g.matmul(name, a, b, intAttribute(node, "transA", 0) != 0, intAttribute(node, "transB", 0) != 0);
      if (alpha != 1.0f) out = g.scale(name + ".alpha", out, alpha);
      if (node.input_size() == 3 && !node.input(2).empty()) {
        int c = value(node.input(2), label);
        if (beta != 1.0f) c = g.scale(name + ".beta", c, beta);
        out = g.add(name + ".bias", out, c);
      }
      define(node, out);
    } else if (type == "MatMul") {
      expectInputs(node, 2, 2);
      const std::string name = opName(node);
      int a = value(node.input(0), label), b = value(node.input(1), label);
      // numpy's 1-D operands: a [K] is a row [1, K], b [K] a column [K, 1]; the unit dimension
      // is dropped from the product.
      const bool row = g.tensor(a).shape.size() == 1, column = g.tensor(b).shape.size() == 1;
      if (row) a = g.reshape(name + ".row", a, {1, g.tensor(a).shape[0]});
      if (column) b = g.reshape(name + ".column", b, {g.tensor(b).shape[0], 1});
      int out = g.matmul(row || column ? name + ".2d" : name, a, b, false, false);
      if (row || column) {
        ir::Shape shape = g.tensor(out).shape;
        if (column) shape.pop_back();
        if (row) shape.erase(shape.end() - 1 - (column ? 0 : 1));
        out = g.reshape(name, out, shape);
      }
      define(node, out);
    } else if (type == "Add" || type == "Sub" || type == "Mul" || type == "Div") {
      expectInputs(node, 2, 2);
      const ir::OpType op = type == "Add"   ? ir::OpType::kAdd
                            : type == "Sub" ? ir::OpType::kSub
                            : type == "Mul" ? ir::OpType::kMul
                                            : ir::OpType::kDiv;
      define(node, g.binary(op, opName(node), value(node.input(0), label), value(node.input(1), label)));
    } else if (type == "Relu") {
      expectInputs(node, 1, 1);
      define(node, g.relu(opName(node), value(node.input(0), label)));
    } else if (type == "SoftmaxCrossEntropyLoss" || type == "NegativeLogLikelihoodLoss") {
      importLoss(node, label, type == "SoftmaxCrossEntropyLoss");
    } else if (const auto kind = unaryKind(type)) {
      expectInputs(node, 1, 1);
      rejectAttributesExcept(node, {});
      define(node, g.unary(*kind, opName(node), value(node.input(0), label)));
    } else if (type == "LeakyRelu" || type == "Elu") {
      expectInputs(node, 1, 1);
      rejectAttributesExcept(node, {"alpha"});
      const bool leaky = type == "LeakyRelu";
      define(node, g.unary(leaky ? ir::UnaryKind::kLeakyRelu : ir::UnaryKind::kElu, opName(node),
                           value(node.input(0), label), floatAttribute(node, "alpha", leaky ? 0.01f : 1.0f)));
    } else if (type == "Selu") {
      expectInputs(node, 1, 1);
      rejectAttributesExcept(node, {"alpha", "gamma"});
      define(node, g.unary(ir::UnaryKind::kSelu, opName(node), value(node.input(0), label),
                           floatAttribute(node, "alpha", 1.67326319217681884765625f),
                           floatAttribute(node, "gamma", 1.05070102214813232421875f)));
    } else if (type == "PRelu") {
      importPRelu(node, label);
    } else if (importComposedActivation(node, label) || importElementwise(node, label)) {
    } else if (const auto direction = compareDirection(type)) {
      expectInputs(node, 2, 2);
      rejectAttributesExcept(node, {});
      define(node, g.compare(*direction, opName(node), value(node.input(0), label), value(node.input(1), label)));
    } else if (type == "And" || type == "Or" || type == "Xor") {
      expectInputs(node, 2, 2);
      rejectAttributesExcept(node, {});
      const std::string name = opName(node);
      const int a = value(node.input(0), label), b = value(node.input(1), label);
      if (g.tensor(a).dtype != DType::kBool || g.tensor(b).dtype != DType::kBool) {
        invalid(label + ": " + type + " needs bool inputs");
      }
      // a != b, or a select with a bool constant: And = a ? b : false, Or = a ? true : b.
      if (type == "Xor") {
        define(node, g.compare(ir::CompareDirection::kNe, name, a, b));
      } else {
        const bool value_of = type == "Or";
        const int constant = g.addConstant(name + (value_of ? ".true" : ".false"), {}, DType::kBool);
        m_result.initializers.emplace(name + (value_of ? ".true" : ".false"),
                                      ir::TensorValue{{}, DType::kBool, {}, {value_of ? 1 : 0}});
        define(node, value_of ? g.where(name, a, constant, b) : g.where(name, a, b, constant));
      }
    } else if (type == "Trilu" || type == "OneHot") {
      importMasked(node, label);
    } else if (type == "Mod" || type == "CumSum" || type == "ReduceProd" || type == "ArgMax" || type == "ArgMin" ||
               type == "Hardmax" || type == "TopK") {
      importMath(node, label);
    } else if (type == "GatherElements" || type == "GatherND" || type == "ScatterElements" || type == "ScatterND") {
      importIndexing(node, label);
    } else if (type == "QuantizeLinear" || type == "DequantizeLinear" || type == "DynamicQuantizeLinear" ||
               type == "MatMulInteger" || type == "ConvInteger" || type == "QLinearMatMul" || type == "QLinearConv") {
      importQuantized(node, label);
    } else if (type == "Einsum") {
      importEinsum(node, label);
    } else if (type == "LSTM" || type == "GRU" || type == "RNN") {
      importRecurrent(node, label);
    } else if (type == "Resize") {
      importResize(node, label);
    } else if (type == "Tile" || type == "DepthToSpace" || type == "SpaceToDepth") {
      importRearrange(node, label);
    } else if (type == "InstanceNormalization" || type == "GroupNormalization") {
      importGroupedNorm(node, label);
    } else if (type == "Not") {
      expectInputs(node, 1, 1);
      rejectAttributesExcept(node, {});
      const std::string name = opName(node);
      const int x = value(node.input(0), label);
      if (g.tensor(x).dtype != DType::kBool) invalid(label + ": Not needs a bool input");
      // x == false: the one bool op the IR has.
      const int no = g.addConstant(name + ".false", {}, DType::kBool);
      m_result.initializers.emplace(name + ".false", ir::TensorValue{{}, DType::kBool, {}, {0}});
      define(node, g.compare(ir::CompareDirection::kEq, name, x, no));
    } else if (type == "Reshape" || type == "Flatten" || type == "Squeeze" || type == "Unsqueeze") {
      const int x = value(node.input(0), label);
      define(node, g.reshape(opName(node), x, viewShape(node, label, g.tensor(x).shape)));
    } else if (type == "ReduceSum" || type == "ReduceMean" || type == "ReduceMax" || type == "ReduceMin" ||
               type == "ReduceSumSquare" || type == "ReduceL1" || type == "ReduceL2" || type == "ReduceLogSumExp" ||
               type == "ReduceLogSum") {
      importReduce(node, label);
    } else if (type == "Concat") {
      rejectAttributesExcept(node, {"axis"});
      if (!attribute(node, "axis")) invalid(label + ": Concat needs an axis");
      std::vector<int> parts;
      for (const auto& input : node.input()) parts.push_back(value(input, label));
      define(node, g.concat(opName(node), parts, intAttribute(node, "axis", 0)));
    } else if (type == "LayerNormalization") {
      importLayerNorm(node, label);
    } else if (type == "Gather") {
      expectInputs(node, 2, 2);
      rejectAttributesExcept(node, {"axis"});
      define(node, g.gather(opName(node), value(node.input(0), label), value(node.input(1), label),
                            intAttribute(node, "axis", 0)));
    } else if (type == "Conv") {
      importConv(node, label);
    } else if (type == "ConvTranspose") {
      importConvTranspose(node, label);
    } else if (type == "BatchNormalization") {
      importBatchNorm(node, label);
    } else if (type == "Pow") {
      expectInputs(node, 2, 2);
      define(node, g.pow(opName(node), value(node.input(0), label), value(node.input(1), label)));
    } else if (type == "Where") {
      expectInputs(node, 3, 3);
      define(node, g.where(opName(node), value(node.input(0), label), value(node.input(1), label),
                           value(node.input(2), label)));
    } else if (type == "MaxPool" || type == "AveragePool") {
      importPool(node, label, type == "MaxPool");
    } else if (type == "GlobalAveragePool" || type == "GlobalMaxPool") {
      expectInputs(node, 1, 1);
      const int x = value(node.input(0), label);
      std::vector<int64_t> spatial;
      for (size_t d = 2; d < g.tensor(x).shape.size(); ++d) spatial.push_back(static_cast<int64_t>(d));
      if (spatial.empty()) invalid(label + ": " + type + " needs [N, C, spatial...]");
      define(node, g.reduce(opName(node), x, type == "GlobalMaxPool" ? ir::Reduction::kMax : ir::Reduction::kMean,
                            spatial, true));
    } else if (type == "Slice") {
      importSlice(node, label);
    } else if (type == "Split") {
      importSplit(node, label);
    } else if (type == "Transpose") {
      expectInputs(node, 1, 1);
      rejectAttributesExcept(node, {"perm"});
      std::vector<int64_t> perm;
      if (const auto* attr = attribute(node, "perm")) perm.assign(attr->ints().begin(), attr->ints().end());
      define(node, g.transpose(opName(node), value(node.input(0), label), perm));
    } else if (type == "Constant") {
      expectInputs(node, 0, 0);
      importConstant(node, label);
    } else if (type == "Identity") {
      expectInputs(node, 1, 1);
      const int x = value(node.input(0), label);
      if (isInitializerWeight(node.input(0), x)) {
        define(node, copyOfWeight(node.input(0), node.output(0)));
      } else {
        define(node, g.reshape(opName(node), x, g.tensor(x).shape));  // a view
      }
    } else if (type == "Cast") {
      expectInputs(node, 1, 1);
      rejectAttributesExcept(node, {"to", "saturate"});
      if (!attribute(node, "to")) invalid(label + ": Cast needs a 'to' type");
      define(node, g.cast(opName(node), value(node.input(0), label),
                          fromOnnxType(static_cast<int32_t>(intAttribute(node, "to", 0)), label + "'s 'to'")));
    } else if (type == "Expand") {
      expectInputs(node, 2, 2);
      const int x = value(node.input(0), label);
      // Expand broadcasts both ways: the output is the broadcast of x's shape and the given one.
      const ir::Shape shape = ir::broadcastShapes(g.tensor(x).shape, constantInts(node, 1, label));
      define(node, g.broadcastTo(opName(node), x, shape, ir::TensorRole::kActivation));
    } else if (type == "Gelu") {
      importGelu(node, label);
    } else if (type == "Dropout") {
      importDropout(node, label);
    } else if (type == "Pad") {
      importPad(node, label);
    } else if (type == "Softmax" || type == "LogSoftmax") {
      expectInputs(node, 1, 1);
      rejectAttributesExcept(node, {"axis"});
      define(node, g.softmax(opName(node), value(node.input(0), label), intAttribute(node, "axis", -1),
                             type == "LogSoftmax"));
    } else {
      throw Error(ErrorKind::kUnsupported,
                  label + ": op " + type + " is not supported yet (supported: " + supportedOnnxOps() + ")");
    }
  } catch (const Error& error) {
    // Shape errors from the IR builders name the op; add the ONNX node.
    if (std::string(error.what()).find(label) == std::string::npos) throw error.within(label);
    throw;
  }
}

}  // namespace tpusim::onnx_detail

namespace tpusim {

using onnx_detail::Importer;
using onnx_detail::invalid;

const char* supportedOnnxOps() {
  return "Abs, Acos, Acosh, Adagrad, Adam, Add, And, ArgMax, ArgMin, Asin, Asinh, Atan, Atanh, AveragePool, "
         "BatchNormalization, Cast, CastLike, Ceil, Celu, Clip, Concat, Constant, ConstantOfShape, Conv, "
         "ConvInteger, ConvTranspose, Cos, Cosh, CumSum, DepthToSpace, DequantizeLinear, Div, Dropout, "
         "DynamicQuantizeLinear, Einsum, Elu, Equal, Erf, Exp, Expand, EyeLike, Flatten, Floor, Gather, "
         "GatherElements, GatherND, Gelu, Gemm, GlobalAveragePool, GlobalMaxPool, Greater, GreaterOrEqual, "
         "GroupNormalization, GRU, Hardmax, HardSigmoid, HardSwish, Identity, InstanceNormalization, IsInf, "
         "IsNaN, LayerNormalization, LeakyRelu, Less, LessOrEqual, Log, LogSoftmax, LpNormalization, LSTM, "
         "MatMul, MatMulInteger, Max, MaxPool, Mean, MeanVarianceNormalization, Min, Mish, Mod, Momentum, Mul, "
         "Neg, NegativeLogLikelihoodLoss, NonZero, Not, OneHot, Or, Pad, Pow, PRelu, QLinearConv, "
         "QLinearMatMul, QuantizeLinear, Range, Reciprocal, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, "
         "ReduceMax, ReduceMean, ReduceMin, ReduceProd, ReduceSum, ReduceSumSquare, Relu, Reshape, Resize, "
         "RNN, Round, ScatterElements, ScatterND, Selu, Shape, Shrink, Sigmoid, Sign, Sin, Sinh, Size, Slice, "
         "Softmax, SoftmaxCrossEntropyLoss, Softplus, Softsign, SpaceToDepth, Split, Sqrt, Squeeze, Sub, Sum, "
         "Tan, Tanh, ThresholdedRelu, Tile, TopK, Transpose, Trilu, Unsqueeze, Where, Xor";
}

const char* compileTimeOnnxOps() {
  return "ConstantOfShape, EyeLike, NonZero, Range, Shape, Size";
}

ImportedModel importOnnxModel(const onnx::ModelProto& model, const OnnxImportOptions& options) {
  const int64_t batch = options.batch.value_or(kDefaultBatch);
  if (batch <= 0) throw Error(ErrorKind::kInvalidConfig, "batch size must be > 0 (got " + std::to_string(batch) + ")");
  if (!model.has_graph() || model.graph().node_size() == 0) invalid("not an ONNX model: it has no graph nodes");
  if (model.ir_version() <= 0) invalid("not an ONNX model: ir_version is missing");
  return Importer(model, batch, options.batch.has_value(), options.known_inputs, options.training).run();
}

ImportedModel importOnnxFile(const std::string& path, const OnnxImportOptions& options) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error(ErrorKind::kInvalidInput, "cannot open '" + path + "'");
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&file)) {
    throw Error(ErrorKind::kInvalidInput, path + ": not an ONNX model (the file does not parse as an ONNX protobuf)");
  }
  try {
    return importOnnxModel(model, options);
  } catch (const Error& error) {
    throw error.within(path);
  }
}

}  // namespace tpusim
