#include "frontend/import/onnx_import.hpp"

#include <fstream>
#include <map>
#include <set>

#include <onnx/onnx_pb.h>

#include "frontend/import/onnx_tensor.hpp"
#include "sim/common/error.hpp"

namespace tpusim {

namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw Error(ErrorKind::kInvalidInput, message);
}

std::string nodeLabel(const onnx::NodeProto& node) {
  return "node '" + (node.name().empty() ? node.output_size() ? node.output(0) : std::string("?") : node.name()) +
         "' (" + node.op_type() + ")";
}

DType fromOnnxType(int32_t type, const std::string& what) {
  switch (type) {
    case onnx::TensorProto::FLOAT: return DType::kF32;
    case onnx::TensorProto::FLOAT16: return DType::kF16;
    case onnx::TensorProto::BFLOAT16: return DType::kBF16;
    case onnx::TensorProto::INT8: return DType::kInt8;
    case onnx::TensorProto::UINT8: return DType::kUInt8;
    case onnx::TensorProto::INT32: return DType::kInt32;
    case onnx::TensorProto::INT64: return DType::kInt64;
    case onnx::TensorProto::UINT32: return DType::kUInt32;
    case onnx::TensorProto::UINT64: return DType::kUInt64;
    case onnx::TensorProto::BOOL: return DType::kBool;
    default: break;
  }
  throw Error(ErrorKind::kUnsupported,
              what + " has ONNX element type " + std::to_string(type) + ", which tpusim does not support");
}

const onnx::AttributeProto* attribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& attr : node.attribute()) {
    if (attr.name() == name) return &attr;
  }
  return nullptr;
}

int64_t intAttribute(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  const auto* attr = attribute(node, name);
  return attr ? attr->i() : fallback;
}

float floatAttribute(const onnx::NodeProto& node, const std::string& name, float fallback) {
  const auto* attr = attribute(node, name);
  return attr ? attr->f() : fallback;
}

void rejectAttributesExcept(const onnx::NodeProto& node, const std::set<std::string>& known) {
  for (const auto& attr : node.attribute()) {
    if (!known.count(attr.name())) {
      throw Error(ErrorKind::kUnsupported, nodeLabel(node) + ": attribute '" + attr.name() + "' is not supported yet");
    }
  }
}

int64_t elementCountOf(const onnx::TensorProto& tensor) {
  int64_t count = 1;
  for (int64_t dim : tensor.dims()) count *= dim;
  return count;
}

class Importer {
 public:
  Importer(const onnx::ModelProto& model, int64_t batch, bool batch_requested,
           const std::map<std::string, ir::TensorValue>& known, bool training)
      : m_model(model), m_batch(batch), m_batch_requested(batch_requested), m_training(training), m_known(known) {}

  ImportedModel run() {
    checkOpset();
    const onnx::GraphProto& graph = m_model.graph();
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
    if (graph.output_size() == 0) invalid("the graph has no outputs");
    for (const auto& output : graph.output()) m_result.graph.markOutput(value(output.name(), "graph output"));
    m_result.batch = m_batch;
    return std::move(m_result);
  }

 private:
  void checkOpset() {
    int64_t opset = -1;
    for (const auto& import : m_model.opset_import()) {
      if (import.domain().empty() || import.domain() == "ai.onnx") opset = import.version();
    }
    if (opset < 0) invalid("the model imports no default-domain opset");
    if (opset < kOldestOnnxOpset) {
      throw Error(ErrorKind::kUnsupported, "opset " + std::to_string(opset) + " is older than " +
                                               std::to_string(kOldestOnnxOpset) +
                                               ", the oldest tpusim reads (re-export with a newer opset)");
    }
  }

  void addInitializer(const onnx::TensorProto& init) {
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
    } else {
      m_result.initializers.emplace(init.name(), decodeOnnxTensor(init));
    }
  }

  void addGraphInput(const onnx::ValueInfoProto& input) {
    const std::string what = "graph input '" + input.name() + "'";
    if (!input.type().has_tensor_type()) throw Error(ErrorKind::kUnsupported, what + " is not a tensor");
    const auto& tensor_type = input.type().tensor_type();
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

  int value(const std::string& name, const std::string& user) const {
    auto it = m_values.find(name);
    if (it == m_values.end()) {
      invalid(user + " uses '" + name +
              "', which no earlier node produces (the graph is cyclic, not in topological order, or incomplete)");
    }
    return it->second;
  }

  void define(const onnx::NodeProto& node, int tensor) {
    if (node.output_size() != 1)
      throw Error(ErrorKind::kUnsupported, nodeLabel(node) + ": only single-output nodes are supported");
    defineOutput(node, 0, tensor);
  }

  void defineOutput(const onnx::NodeProto& node, int index, int tensor) {
    const std::string& name = node.output(index);
    if (name.empty()) return;  // an optional output the model does not use
    if (m_values.count(name)) invalid(nodeLabel(node) + " redefines value '" + name + "'");
    m_result.graph.rename(tensor, name);
    m_values[name] = tensor;
  }

  // The values of an integer input that must be known when compiling (a shape, axes).
  std::vector<int64_t> constantInts(const onnx::NodeProto& node, int index, const std::string& label) const {
    const std::string& name = node.input(index);
    auto it = m_result.initializers.find(name);
    if (it == m_result.initializers.end() || ir::TensorValue::isFloating(it->second.dtype)) {
      throw Error(ErrorKind::kUnsupported, label + ": input '" + name +
                                               "' must be a constant integer tensor (an initializer or a Constant): "
                                               "tpusim compiles static shapes");
    }
    return it->second.ints;
  }

  static int64_t normalizeAxis(int64_t axis, int64_t rank, const std::string& label) {
    if (axis < -rank || axis >= rank) {
      throw Error(ErrorKind::kInvalidInput,
                  label + ": axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    }
    return axis < 0 ? axis + rank : axis;
  }

  // The output shape of Reshape, Flatten, Squeeze or Unsqueeze: all are views.
  ir::Shape viewShape(const onnx::NodeProto& node, const std::string& label, const ir::Shape& in) const {
    const std::string& type = node.op_type();
    const auto rank = static_cast<int64_t>(in.size());
    if (type == "Flatten") {
      expectInputCount(node, 1, 1, label);
      const int64_t axis = intAttribute(node, "axis", 1);
      const int64_t split = axis == rank ? rank : normalizeAxis(axis, rank, label);
      return {ir::elementCount(ir::Shape(in.begin(), in.begin() + split)),
              ir::elementCount(ir::Shape(in.begin() + split, in.end()))};
    }
    if (type == "Reshape") {
      expectInputCount(node, 2, 2, label);
      const bool allow_zero = intAttribute(node, "allowzero", 0) != 0;
      ir::Shape out = constantInts(node, 1, label);
      int64_t inferred = -1;
      int64_t known = 1;
      for (size_t i = 0; i < out.size(); ++i) {
        if (out[i] == 0 && !allow_zero) {
          if (i >= in.size()) invalid(label + ": a 0 in the shape copies a dimension the input does not have");
          out[i] = in[i];
        }
        if (out[i] == -1) {
          if (inferred >= 0) invalid(label + ": the shape has more than one -1");
          inferred = static_cast<int64_t>(i);
        } else if (out[i] < 0) {
          invalid(label + ": the shape has a negative dimension");
        } else {
          known *= out[i];
        }
      }
      if (inferred >= 0) {
        if (known == 0 || ir::elementCount(in) % known != 0) invalid(label + ": cannot infer the -1 dimension");
        out[static_cast<size_t>(inferred)] = ir::elementCount(in) / known;
      }
      return out;
    }
    std::vector<int64_t> axes;
    if (node.input_size() > 1 && !node.input(1).empty()) axes = constantInts(node, 1, label);
    if (type == "Squeeze") {
      expectInputCount(node, 1, 2, label);
      std::vector<bool> drop(in.size(), axes.empty());
      for (int64_t axis : axes) {
        const int64_t a = normalizeAxis(axis, rank, label);
        if (in[static_cast<size_t>(a)] != 1)
          invalid(label + ": cannot squeeze dimension " + std::to_string(a) + " of size " +
                  std::to_string(in[static_cast<size_t>(a)]));
        drop[static_cast<size_t>(a)] = true;
      }
      ir::Shape out;
      for (size_t i = 0; i < in.size(); ++i) {
        if (!(drop[i] && in[i] == 1)) out.push_back(in[i]);
      }
      return out;
    }
    // Unsqueeze: axes index the output, whose rank grows by their count.
    expectInputCount(node, 2, 2, label);
    const auto out_rank = rank + static_cast<int64_t>(axes.size());
    std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
    for (int64_t axis : axes) {
      const int64_t a = normalizeAxis(axis, out_rank, label);
      if (inserted[static_cast<size_t>(a)]) invalid(label + ": axis " + std::to_string(axis) + " is repeated");
      inserted[static_cast<size_t>(a)] = true;
    }
    ir::Shape out;
    size_t next = 0;
    for (int64_t i = 0; i < out_rank; ++i) out.push_back(inserted[static_cast<size_t>(i)] ? 1 : in[next++]);
    return out;
  }

  // LayerNormalization (opset 17) as the ops it is made of, so that training differentiates it:
  // mean = E[x], d = x - mean, inv = 1 / sqrt(E[d^2] + epsilon), y = d * inv * scale + bias, the
  // expectations over dimensions axis .. rank-1 (kept as 1s). Mean and InvStdDev are optional outputs.
  void importLayerNorm(const onnx::NodeProto& node, const std::string& label) {
    expectInputCount(node, 2, 3, label);
    rejectAttributesExcept(node, {"axis", "epsilon", "stash_type"});
    if (intAttribute(node, "stash_type", 1) != 1) {
      throw Error(ErrorKind::kUnsupported, label + ": only stash_type 1 (float statistics) is supported");
    }
    ir::Graph& g = m_result.graph;
    const std::string name = opName(node);
    const int x = value(node.input(0), label);
    const ir::Tensor input = g.tensor(x);
    const auto rank = static_cast<int64_t>(input.shape.size());
    const int64_t axis = normalizeAxis(intAttribute(node, "axis", -1), rank, label);
    std::vector<int64_t> axes;
    for (int64_t a = axis; a < rank; ++a) axes.push_back(a);
    const std::string epsilon_name = name + ".epsilon";
    const int epsilon = g.addConstant(epsilon_name, {}, input.dtype);
    m_result.initializers.emplace(epsilon_name,
                                  ir::TensorValue{{}, input.dtype, {floatAttribute(node, "epsilon", 1e-5f)}, {}});
    const int mean = g.reduce(name + ".mean", x, ir::Reduction::kMean, axes, true);
    const int centered = g.binary(ir::OpType::kSub, name + ".centered", x, mean);
    const int squares = g.binary(ir::OpType::kMul, name + ".squares", centered, centered);
    const int variance = g.reduce(name + ".variance", squares, ir::Reduction::kMean, axes, true);
    const int stddev = g.unary(ir::UnaryKind::kSqrt, name + ".stddev", g.add(name + ".var_eps", variance, epsilon));
    const int inv = g.unary(ir::UnaryKind::kReciprocal, name + ".inv_stddev", stddev);
    int y = g.binary(ir::OpType::kMul, name + ".normalized", centered, inv);
    y = g.binary(ir::OpType::kMul, name + ".scaled", y, value(node.input(1), label));
    if (node.input_size() == 3 && !node.input(2).empty()) y = g.add(name + ".shifted", y, value(node.input(2), label));
    if (node.output_size() < 1 || node.output_size() > 3) invalid(label + " has a wrong number of outputs");
    defineOutput(node, 0, y);
    if (node.output_size() > 1) defineOutput(node, 1, mean);
    if (node.output_size() > 2) defineOutput(node, 2, inv);
  }

  std::vector<int64_t> intsAttribute(const onnx::NodeProto& node, const std::string& name,
                                     std::vector<int64_t> fallback) const {
    const auto* attr = attribute(node, name);
    return attr ? std::vector<int64_t>(attr->ints().begin(), attr->ints().end()) : fallback;
  }

  // SAME_UPPER / SAME_LOWER padding: output = ceil(input / stride), the odd pad at the end
  // (upper) or the start (lower). Fills pads[d] and pads[d + 2].
  void samePadding(const std::string& mode, const ir::Shape& x_shape, const std::vector<int64_t>& kernel,
                   const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                   std::vector<int64_t>& pads) const {
    const size_t rank = x_shape.size() - 2;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t out = (x_shape[2 + d] + strides[d] - 1) / strides[d];
      const int64_t span = dilations[d] * (kernel[d] - 1) + 1;
      const int64_t total = std::max<int64_t>(0, (out - 1) * strides[d] + span - x_shape[2 + d]);
      const int64_t small = total / 2;
      pads[d] = mode == "SAME_UPPER" ? small : total - small;
      pads[d + rank] = total - pads[d];
    }
  }

  void importPool(const onnx::NodeProto& node, const std::string& label, bool max) {
    expectInputCount(node, 1, 1, label);
    if (max) {
      rejectAttributesExcept(
          node, {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"});
    } else {
      rejectAttributesExcept(node, {"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"});
    }
    ir::Graph& g = m_result.graph;
    const int x = value(node.input(0), label);
    const ir::Shape x_shape = g.tensor(x).shape;
    if (x_shape.size() < 3) invalid(label + ": pooling needs [N, C, spatial...]");
    const size_t rank = x_shape.size() - 2;
    ir::PoolGeometry geometry;
    geometry.max = max;
    geometry.kernel = intsAttribute(node, "kernel_shape", {});
    geometry.strides = intsAttribute(node, "strides", std::vector<int64_t>(rank, 1));
    geometry.dilations = intsAttribute(node, "dilations", std::vector<int64_t>(rank, 1));
    geometry.pads = intsAttribute(node, "pads", std::vector<int64_t>(2 * rank, 0));
    geometry.ceil_mode = intAttribute(node, "ceil_mode", 0) != 0;
    geometry.count_include_pad = intAttribute(node, "count_include_pad", 0) != 0;
    geometry.column_major_indices = intAttribute(node, "storage_order", 0) != 0;
    if (geometry.kernel.size() != rank) invalid(label + ": kernel_shape must have one entry per spatial dimension");
    const auto* auto_pad = attribute(node, "auto_pad");
    const std::string mode = auto_pad ? auto_pad->s() : "NOTSET";
    if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
      samePadding(mode, x_shape, geometry.kernel, geometry.strides, geometry.dilations, geometry.pads);
    } else if (mode == "VALID") {
      geometry.pads.assign(2 * rank, 0);
    } else if (mode != "NOTSET") {
      invalid(label + ": unknown auto_pad '" + mode + "'");
    }
    const std::string name = opName(node);
    if (node.output_size() < 1 || node.output_size() > (max ? 2 : 1)) invalid(label + " has a wrong number of outputs");
    defineOutput(node, 0, g.pool(name, x, geometry));
    if (node.output_size() == 2) defineOutput(node, 1, g.poolArgmax(name + ".indices", x, geometry));
  }

  // Conv over [N, C, H, W], with an optional bias added as [M, 1, 1].
  void importConv(const onnx::NodeProto& node, const std::string& label) {
    expectInputCount(node, 2, 3, label);
    rejectAttributesExcept(node, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
    ir::Graph& g = m_result.graph;
    const int x = value(node.input(0), label);
    const int w = value(node.input(1), label);
    const ir::Shape x_shape = g.tensor(x).shape;
    const ir::Shape w_shape = g.tensor(w).shape;
    if (x_shape.size() != 4 || w_shape.size() != 4) {
      throw Error(ErrorKind::kUnsupported, label + ": only 2-D convolutions ([N, C, H, W]) are supported yet");
    }
    const std::vector<int64_t> kernel = intsAttribute(node, "kernel_shape", {w_shape[2], w_shape[3]});
    if (kernel != std::vector<int64_t>{w_shape[2], w_shape[3]})
      invalid(label + ": kernel_shape does not match the weights");
    ir::ConvGeometry geometry;
    geometry.strides = intsAttribute(node, "strides", {1, 1});
    geometry.dilations = intsAttribute(node, "dilations", {1, 1});
    geometry.pads = intsAttribute(node, "pads", {0, 0, 0, 0});
    geometry.group = intAttribute(node, "group", 1);
    if (geometry.strides.size() != 2 || geometry.dilations.size() != 2 || geometry.pads.size() != 4) {
      invalid(label + ": strides, dilations and pads must have 2, 2 and 4 entries");
    }
    const auto* auto_pad = attribute(node, "auto_pad");
    const std::string mode = auto_pad ? auto_pad->s() : "NOTSET";
    if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
      samePadding(mode, x_shape, kernel, geometry.strides, geometry.dilations, geometry.pads);
    } else if (mode == "VALID") {
      geometry.pads = {0, 0, 0, 0};
    } else if (mode != "NOTSET") {
      invalid(label + ": unknown auto_pad '" + mode + "'");
    }
    const std::string name = opName(node);
    int out = g.conv(name, x, w, geometry);
    if (node.input_size() == 3 && !node.input(2).empty()) {
      const int bias = value(node.input(2), label);
      out = g.add(name + ".bias", out, g.reshape(name + ".bias_shape", bias, {w_shape[0], 1, 1}));
    }
    define(node, out);
  }

  // A scalar constant of `dtype`, for the decompositions below.
  int scalarConstant(const std::string& name, DType dtype, float value) {
    const int id = m_result.graph.addConstant(name, {}, dtype);
    m_result.initializers.emplace(name, ir::TensorValue{{}, dtype, {value}, {}});
    return id;
  }

  // BatchNormalization over [N, C, ...] as the ops it is made of. Inference uses the running
  // mean and variance; training (training_mode, or a training import) the batch's, and then
  // also yields the updated running statistics: momentum x running + (1 - momentum) x batch.
  void importBatchNorm(const onnx::NodeProto& node, const std::string& label) {
    expectInputCount(node, 5, 5, label);
    rejectAttributesExcept(node, {"epsilon", "momentum", "training_mode"});
    ir::Graph& g = m_result.graph;
    const std::string name = opName(node);
    const int x = value(node.input(0), label);
    const ir::Tensor input = g.tensor(x);
    if (input.shape.size() < 2) invalid(label + ": BatchNormalization needs [N, C, ...]");
    const int64_t channels = input.shape[1];
    ir::Shape per_channel = {channels};
    per_channel.resize(input.shape.size() - 1, 1);  // [C, 1, ...] broadcasts over [N, C, ...]
    const auto shaped = [&](int tensor, const std::string& part) {
      if (g.tensor(tensor).shape != ir::Shape{channels}) invalid(label + ": " + part + " must be [C]");
      return g.reshape(name + "." + part + "_shape", tensor, per_channel);
    };
    const int scale = shaped(value(node.input(1), label), "scale");
    const int bias = shaped(value(node.input(2), label), "bias");
    const int running_mean = value(node.input(3), label);
    const int running_var = value(node.input(4), label);
    g.freeze(running_mean);  // statistics, not trained by gradients
    g.freeze(running_var);
    const bool batch_statistics = intAttribute(node, "training_mode", 0) != 0 || m_training;
    const int epsilon = scalarConstant(name + ".epsilon", input.dtype, floatAttribute(node, "epsilon", 1e-5f));
    int mean = shaped(running_mean, "mean");
    int variance = shaped(running_var, "var");
    int centered = -1;
    std::vector<int64_t> axes = {0};
    for (size_t d = 2; d < input.shape.size(); ++d) axes.push_back(static_cast<int64_t>(d));
    if (batch_statistics) {
      mean = g.reshape(name + ".batch_mean_shape", g.reduce(name + ".batch_mean", x, ir::Reduction::kMean, axes, false),
                       per_channel);
      centered = g.binary(ir::OpType::kSub, name + ".centered", x, mean);
      const int squares = g.binary(ir::OpType::kMul, name + ".squares", centered, centered);
      variance = g.reshape(name + ".batch_var_shape",
                           g.reduce(name + ".batch_var", squares, ir::Reduction::kMean, axes, false), per_channel);
    } else {
      centered = g.binary(ir::OpType::kSub, name + ".centered", x, mean);
    }
    const int stddev = g.unary(ir::UnaryKind::kSqrt, name + ".stddev", g.add(name + ".var_eps", variance, epsilon));
    int y = g.binary(ir::OpType::kDiv, name + ".normalized", centered, stddev);
    y = g.add(name + ".shifted", g.binary(ir::OpType::kMul, name + ".scaled", y, scale), bias);
    if (node.output_size() < 1 || node.output_size() > 3) invalid(label + " has a wrong number of outputs");
    defineOutput(node, 0, y);
    if (node.output_size() > 1) {
      if (!batch_statistics) invalid(label + ": running statistics are outputs only in training mode");
      const float momentum = floatAttribute(node, "momentum", 0.9f);
      const auto blend = [&](int running, int batch, const std::string& part) {
        const int flat = g.reshape(name + "." + part + "_flat", batch, {channels});
        return g.add(name + "." + part + "_running", g.scale(name + "." + part + "_old", running, momentum),
                     g.scale(name + "." + part + "_new", flat, 1.0 - momentum));
      };
      defineOutput(node, 1, blend(running_mean, mean, "mean"));
      if (node.output_size() > 2) defineOutput(node, 2, blend(running_var, variance, "var"));
    }
  }

  // Slice (opset 13): starts, ends and the optional axes and steps are constant inputs;
  // out-of-range starts and ends clamp as numpy's do.
  void importSlice(const onnx::NodeProto& node, const std::string& label) {
    expectInputCount(node, 3, 5, label);
    rejectAttributesExcept(node, {});
    ir::Graph& g = m_result.graph;
    const int x = value(node.input(0), label);
    const ir::Shape shape = g.tensor(x).shape;
    const auto rank = static_cast<int64_t>(shape.size());
    const std::vector<int64_t> starts = constantInts(node, 1, label);
    const std::vector<int64_t> ends = constantInts(node, 2, label);
    std::vector<int64_t> axes;
    if (node.input_size() > 3 && !node.input(3).empty()) {
      axes = constantInts(node, 3, label);
    } else {
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    }
    std::vector<int64_t> steps(starts.size(), 1);
    if (node.input_size() > 4 && !node.input(4).empty()) steps = constantInts(node, 4, label);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
      invalid(label + ": starts, ends, axes and steps must have the same length");
    }
    std::vector<int64_t> first(shape.size(), 0);
    std::vector<int64_t> stride(shape.size(), 1);
    ir::Shape out = shape;
    std::vector<bool> seen(shape.size(), false);
    for (size_t i = 0; i < starts.size(); ++i) {
      const int64_t axis = normalizeAxis(axes[i], rank, label);
      if (seen[static_cast<size_t>(axis)]) invalid(label + ": axis " + std::to_string(axis) + " is repeated");
      seen[static_cast<size_t>(axis)] = true;
      const int64_t dim = shape[static_cast<size_t>(axis)];
      const int64_t step = steps[i];
      if (step == 0) invalid(label + ": a step is 0");
      int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
      int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
      if (step > 0) {
        start = std::clamp<int64_t>(start, 0, dim);
        end = std::clamp<int64_t>(end, 0, dim);
      } else {
        start = std::clamp<int64_t>(start, 0, dim - 1);
        end = std::clamp<int64_t>(end, -1, dim - 1);
      }
      const int64_t length = step > 0 ? (end - start + step - 1) / step : (start - end + (-step) - 1) / (-step);
      out[static_cast<size_t>(axis)] = std::max<int64_t>(0, length);
      first[static_cast<size_t>(axis)] = out[static_cast<size_t>(axis)] == 0 ? 0 : start;
      stride[static_cast<size_t>(axis)] = step;
    }
    define(node, g.stridedSlice(opName(node), x, first, stride, out));
  }

  // Split (opset 13) along `axis` into the given sizes (a constant input) or equal parts.
  void importSplit(const onnx::NodeProto& node, const std::string& label) {
    expectInputCount(node, 1, 2, label);
    rejectAttributesExcept(node, {"axis"});
    ir::Graph& g = m_result.graph;
    const int x = value(node.input(0), label);
    const ir::Shape shape = g.tensor(x).shape;
    const int64_t axis = normalizeAxis(intAttribute(node, "axis", 0), static_cast<int64_t>(shape.size()), label);
    const int64_t dim = shape[static_cast<size_t>(axis)];
    std::vector<int64_t> sizes;
    if (node.input_size() == 2 && !node.input(1).empty()) {
      sizes = constantInts(node, 1, label);
    } else {
      const int64_t parts = node.output_size();
      if (parts == 0 || dim % parts != 0)
        invalid(label + ": dimension " + std::to_string(dim) + " does not split into " + std::to_string(parts) +
                " equal parts");
      sizes.assign(static_cast<size_t>(parts), dim / parts);
    }
    if (static_cast<int>(sizes.size()) != node.output_size())
      invalid(label + ": split sizes and outputs differ in number");
    int64_t start = 0;
    const std::string name = opName(node);
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] < 0) invalid(label + ": a split size is negative");
      if (start + sizes[i] > dim) invalid(label + ": split sizes exceed the dimension");
      defineOutput(node, static_cast<int>(i),
                   g.slice(name + "." + std::to_string(i), x, axis, start, sizes[i], ir::TensorRole::kActivation));
      start += sizes[i];
    }
    if (start != dim) invalid(label + ": split sizes do not add up to the dimension");
  }

  // ReduceSum takes its axes as an input (opset 13), ReduceMean as an attribute.
  void importReduce(const onnx::NodeProto& node, const std::string& label, bool mean) {
    ir::Graph& g = m_result.graph;
    const int x = value(node.input(0), label);
    const auto rank = static_cast<int64_t>(g.tensor(x).shape.size());
    std::vector<int64_t> axes;
    if (mean) {
      expectInputCount(node, 1, 1, label);
      rejectAttributesExcept(node, {"axes", "keepdims"});
      if (const auto* attr = attribute(node, "axes")) axes.assign(attr->ints().begin(), attr->ints().end());
    } else {
      expectInputCount(node, 1, 2, label);
      rejectAttributesExcept(node, {"keepdims", "noop_with_empty_axes"});
      if (node.input_size() == 2 && !node.input(1).empty()) axes = constantInts(node, 1, label);
      if (axes.empty() && intAttribute(node, "noop_with_empty_axes", 0) != 0) {
        define(node, g.reshape(opName(node), x, g.tensor(x).shape));  // reduces nothing
        return;
      }
    }
    for (int64_t& axis : axes) axis = normalizeAxis(axis, rank, label);
    define(node, g.reduce(opName(node), x, mean ? ir::Reduction::kMean : ir::Reduction::kSum, axes,
                          intAttribute(node, "keepdims", 1) != 0));
  }

  static void expectInputCount(const onnx::NodeProto& node, int min, int max, const std::string& label) {
    if (node.input_size() < min || node.input_size() > max) {
      throw Error(ErrorKind::kInvalidInput, label + " has " + std::to_string(node.input_size()) + " inputs, expected " +
                                                std::to_string(min) + (min == max ? "" : " to " + std::to_string(max)));
    }
  }

  static std::optional<ir::UnaryKind> unaryKind(const std::string& type) {
    static const std::map<std::string, ir::UnaryKind> kKinds = {
        {"Abs", ir::UnaryKind::kAbs},         {"Erf", ir::UnaryKind::kErf},
        {"Exp", ir::UnaryKind::kExp},         {"Log", ir::UnaryKind::kLog},
        {"Neg", ir::UnaryKind::kNeg},         {"Reciprocal", ir::UnaryKind::kReciprocal},
        {"Sigmoid", ir::UnaryKind::kSigmoid}, {"Sqrt", ir::UnaryKind::kSqrt},
        {"Tanh", ir::UnaryKind::kTanh},
    };
    auto it = kKinds.find(type);
    if (it == kKinds.end()) return std::nullopt;
    return it->second;
  }

  // A Constant node becomes a constant tensor whose value travels with the weights.
  void importConstant(const onnx::NodeProto& node, const std::string& label) {
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
    const std::string& name = node.output(0);
    if (m_values.count(name)) invalid(label + " redefines value '" + name + "'");
    m_values[name] = m_result.graph.addConstant(name, value.shape, value.dtype);
    m_result.initializers.emplace(name, std::move(value));
  }

  // SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss share their attributes.
  void importLoss(const onnx::NodeProto& node, const std::string& label, bool with_softmax) {
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

  void expectInputs(const onnx::NodeProto& node, int min, int max) {
    if (node.input_size() < min || node.input_size() > max) {
      invalid(nodeLabel(node) + " has " + std::to_string(node.input_size()) + " inputs, expected " +
              (min == max ? std::to_string(min) : std::to_string(min) + " to " + std::to_string(max)));
    }
  }

  std::string opName(const onnx::NodeProto& node) {
    return node.name().empty() ? node.op_type() + "_" + std::to_string(m_unnamed++) : node.name();
  }

  void importNode(const onnx::NodeProto& node) {
    if (!node.domain().empty() && node.domain() != "ai.onnx") {
      throw Error(ErrorKind::kUnsupported, nodeLabel(node) + ": domain '" + node.domain() + "' is not supported");
    }
    const std::string& type = node.op_type();
    const std::string label = nodeLabel(node);
    ir::Graph& g = m_result.graph;
    try {
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
        define(node, g.matmul(opName(node), value(node.input(0), label), value(node.input(1), label), false, false));
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
      } else if (type == "Reshape" || type == "Flatten" || type == "Squeeze" || type == "Unsqueeze") {
        const int x = value(node.input(0), label);
        define(node, g.reshape(opName(node), x, viewShape(node, label, g.tensor(x).shape)));
      } else if (type == "ReduceSum" || type == "ReduceMean") {
        importReduce(node, label, type == "ReduceMean");
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
      } else if (type == "GlobalAveragePool") {
        expectInputs(node, 1, 1);
        const int x = value(node.input(0), label);
        std::vector<int64_t> spatial;
        for (size_t d = 2; d < g.tensor(x).shape.size(); ++d) spatial.push_back(static_cast<int64_t>(d));
        if (spatial.empty()) invalid(label + ": GlobalAveragePool needs [N, C, spatial...]");
        define(node, g.reduce(opName(node), x, ir::Reduction::kMean, spatial, true));
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

  const onnx::ModelProto& m_model;
  int64_t m_batch;
  bool m_batch_requested;
  bool m_training = false;
  const std::map<std::string, ir::TensorValue>& m_known;
  bool m_first_input = true;
  ImportedModel m_result;
  std::map<std::string, int> m_values;
  int m_unnamed = 0;
};

}  // namespace

const char* supportedOnnxOps() {
  return "Abs, Add, AveragePool, BatchNormalization, Concat, Constant, Conv, Div, Erf, Exp, Flatten, Gather, Gemm, "
         "GlobalAveragePool, LayerNormalization, Log, LogSoftmax, MatMul, MaxPool, Mul, Neg, "
         "NegativeLogLikelihoodLoss, Pow, "
         "Reciprocal, ReduceMean, ReduceSum, Relu, Reshape, Sigmoid, Slice, Softmax, SoftmaxCrossEntropyLoss, Split, "
         "Sqrt, Squeeze, Sub, Tanh, Transpose, Unsqueeze, Where";
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
