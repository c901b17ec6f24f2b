// The ONNX importer's layer ops: convolution, pooling, normalization, shapes and views.
#include <algorithm>

#include "frontend/import/onnx_importer.hpp"

namespace tpusim::onnx_detail {

ir::Shape Importer::viewShape(const onnx::NodeProto& node, const std::string& label, const ir::Shape& in) const {
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
      } else if (__builtin_mul_overflow(known, out[i], &known)) {
        invalid(label + ": the shape's dimensions multiply past 2^63");
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

Importer::Normalized Importer::normalized(const std::string& name, int x, const std::vector<int64_t>& axes,
                                          float epsilon_value) {
  ir::Graph& g = m_result.graph;
  const DType dtype = g.tensor(x).dtype;
  const std::string epsilon_name = name + ".epsilon";
  const int epsilon = g.addConstant(epsilon_name, {}, dtype);
  m_result.initializers.emplace(epsilon_name, ir::TensorValue{{}, dtype, {epsilon_value}, {}});
  const int mean = g.reduce(name + ".mean", x, ir::Reduction::kMean, axes, true);
  const int centered = g.binary(ir::OpType::kSub, name + ".centered", x, mean);
  const int squares = g.binary(ir::OpType::kMul, name + ".squares", centered, centered);
  const int variance = g.reduce(name + ".variance", squares, ir::Reduction::kMean, axes, true);
  const int stddev = g.unary(ir::UnaryKind::kSqrt, name + ".stddev", g.add(name + ".var_eps", variance, epsilon));
  const int inv = g.unary(ir::UnaryKind::kReciprocal, name + ".inv_stddev", stddev);
  return {g.binary(ir::OpType::kMul, name + ".normalized", centered, inv), mean, inv};
}

// InstanceNormalization: each (n, c) over its spatial positions, then scale and B per channel.
// GroupNormalization: each group of num_groups over its channels and positions; scale and bias
// per channel (opset 21) or, as opset 18 wrote them, per group.
void Importer::importGroupedNorm(const onnx::NodeProto& node, const std::string& label) {
  const bool instance = node.op_type() == "InstanceNormalization";
  expectInputCount(node, 3, 3, label);
  if (instance) {
    rejectAttributesExcept(node, {"epsilon"});
  } else {
    rejectAttributesExcept(node, {"epsilon", "num_groups", "stash_type"});
    if (intAttribute(node, "stash_type", 1) != 1) {
      throw Error(ErrorKind::kUnsupported, label + ": only stash_type 1 (float statistics) is supported");
    }
  }
  ir::Graph& g = m_result.graph;
  const std::string name = opName(node);
  const int x = value(node.input(0), label);
  const ir::Shape shape = g.tensor(x).shape;
  if (shape.size() < 3) invalid(label + ": " + node.op_type() + " needs [N, C, spatial...]");
  const int64_t channels = shape[1];
  const int64_t groups = instance ? channels : intAttribute(node, "num_groups", 0);
  if (groups < 1 || channels % groups != 0) {
    invalid(label + ": num_groups " + std::to_string(groups) + " does not divide " + std::to_string(channels) +
            " channels");
  }
  // [N, G, C / G x spatial]: one row per group (an instance is a group of one channel).
  const ir::Shape grouped = {shape[0], groups, ir::elementCount(shape) / (shape[0] * groups)};
  const int rows = g.reshape(name + ".grouped", x, grouped);
  const Normalized n = normalized(name, rows, {2}, floatAttribute(node, "epsilon", 1e-5f));
  const int scale = value(node.input(1), label), bias = value(node.input(2), label);
  const int64_t per = ir::elementCount(g.tensor(scale).shape);
  if (per != channels && per != groups) {
    invalid(label + ": scale has " + std::to_string(per) + " values for " + std::to_string(channels) + " channels in " +
            std::to_string(groups) + " groups");
  }
  int y = -1;
  if (per == channels) {  // per channel, on x's shape
    ir::Shape per_channel(shape.size() - 1, 1);
    per_channel[0] = channels;
    y = g.reshape(name + ".ungrouped", n.y, shape);
    y = g.binary(ir::OpType::kMul, name + ".scaled", y, g.reshape(name + ".scale_shape", scale, per_channel));
    y = g.add(name, y, g.reshape(name + ".bias_shape", bias, per_channel));
  } else {  // per group (opset 18), on the grouped rows
    y = g.binary(ir::OpType::kMul, name + ".scaled", n.y, g.reshape(name + ".scale_shape", scale, {groups, 1}));
    y = g.reshape(name, g.add(name + ".shifted", y, g.reshape(name + ".bias_shape", bias, {groups, 1})), shape);
  }
  define(node, y);
}

void Importer::importLayerNorm(const onnx::NodeProto& node, const std::string& label) {
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
  const Normalized n = normalized(name, x, axes, floatAttribute(node, "epsilon", 1e-5f));
  const int mean = n.mean, inv = n.inv_stddev;
  int y = g.binary(ir::OpType::kMul, name + ".scaled", n.y, value(node.input(1), label));
  if (node.input_size() == 3 && !node.input(2).empty()) y = g.add(name + ".shifted", y, value(node.input(2), label));
  if (node.output_size() < 1 || node.output_size() > 3) invalid(label + " has a wrong number of outputs");
  defineOutput(node, 0, y);
  if (node.output_size() > 1) defineOutput(node, 1, mean);
  if (node.output_size() > 2) defineOutput(node, 2, inv);
}

std::vector<int64_t> Importer::intsAttribute(const onnx::NodeProto& node, const std::string& name,
                                             std::vector<int64_t> fallback) const {
  const auto* attr = attribute(node, name);
  return attr ? std::vector<int64_t>(attr->ints().begin(), attr->ints().end()) : fallback;
}

void Importer::samePadding(const std::string& mode, const ir::Shape& x_shape, const std::vector<int64_t>& kernel,
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

void Importer::importPool(const onnx::NodeProto& node, const std::string& label, bool max) {
  expectInputCount(node, 1, 1, label);
  if (max) {
    rejectAttributesExcept(node,
                           {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"});
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

int Importer::scalarConstant(const std::string& name, DType dtype, float value) {
  const int id = m_result.graph.addConstant(name, {}, dtype);
  m_result.initializers.emplace(name, ir::TensorValue{{}, dtype, {value}, {}});
  return id;
}

int Importer::constantTensor(const std::string& name, ir::TensorValue value) {
  const int id = m_result.graph.addConstant(name, value.shape, value.dtype);
  m_result.initializers.emplace(name, std::move(value));
  return id;
}

void Importer::importBatchNorm(const onnx::NodeProto& node, const std::string& label) {
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
    // One pass over x for both statistics, as XLA's batch-norm expansion computes them:
    // var = E[x^2] - E[x]^2, clamped at 0 against rounding. The two reductions read the same
    // x, so they fuse into the pass that makes x (multi-output fusion), and the gradient
    // needs no reduction over x - mean.
    const int batch_mean = g.reduce(name + ".batch_mean", x, ir::Reduction::kMean, axes, false);
    const int squares = g.binary(ir::OpType::kMul, name + ".squares", x, x);
    const int mean_square = g.reduce(name + ".batch_mean_square", squares, ir::Reduction::kMean, axes, false);
    const int spread = g.binary(ir::OpType::kSub, name + ".batch_spread", mean_square,
                                g.binary(ir::OpType::kMul, name + ".batch_mean_squared", batch_mean, batch_mean));
    const int zero = scalarConstant(name + ".zero", input.dtype, 0.0f);
    mean = g.reshape(name + ".batch_mean_shape", batch_mean, per_channel);
    variance = g.reshape(name + ".batch_var_shape", g.binary(ir::OpType::kMaximum, name + ".batch_var", spread, zero),
                         per_channel);
    centered = g.binary(ir::OpType::kSub, name + ".centered", x, mean);
  } else {
    centered = g.binary(ir::OpType::kSub, name + ".centered", x, mean);
  }
  // scale / stddev per channel first, as XLA and every framework's inference kernel do: one
  // multiply per element instead of a divide and a multiply.
  const int stddev = g.unary(ir::UnaryKind::kSqrt, name + ".stddev", g.add(name + ".var_eps", variance, epsilon));
  const int factor = g.binary(ir::OpType::kDiv, name + ".factor", scale, stddev);
  const int y = g.add(name + ".shifted", g.binary(ir::OpType::kMul, name + ".scaled", centered, factor), bias);
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

// Pad (opset 13+): `pads` [low..., high...] a constant, for every dimension or for those of the
// constant `axes` input (opset 18); `constant_value` a scalar tensor, 0 if absent; modes
// constant, edge and reflect (Graph::pad). wrap (opset 19) is unsupported.
void Importer::importPad(const onnx::NodeProto& node, const std::string& label) {
  expectInputCount(node, 2, 4, label);
  rejectAttributesExcept(node, {"mode"});
  ir::Graph& g = m_result.graph;
  const std::string name = opName(node);
  const int x = value(node.input(0), label);
  const auto rank = static_cast<int64_t>(g.tensor(x).shape.size());
  const onnx::AttributeProto* mode_attr = attribute(node, "mode");
  const std::string mode_name = mode_attr ? mode_attr->s() : "constant";
  ir::PadMode mode = ir::PadMode::kConstant;
  if (mode_name == "edge") {
    mode = ir::PadMode::kEdge;
  } else if (mode_name == "reflect") {
    mode = ir::PadMode::kReflect;
  } else if (mode_name != "constant") {
    throw Error(ErrorKind::kUnsupported,
                label + ": Pad mode '" + mode_name + "' is not supported (constant, edge, reflect)");
  }
  std::vector<int64_t> axes;
  if (node.input_size() > 3 && !node.input(3).empty()) {
    for (int64_t axis : constantInts(node, 3, label)) {
      if (axis < -rank || axis >= rank) invalid(label + ": Pad axis " + std::to_string(axis) + " is out of range");
      axes.push_back(axis < 0 ? axis + rank : axis);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  const std::vector<int64_t> pads = constantInts(node, 1, label);
  if (pads.size() != 2 * axes.size()) {
    invalid(label + ": Pad has " + std::to_string(pads.size()) + " pads for " + std::to_string(axes.size()) +
            " axes (it needs two per axis)");
  }
  std::vector<int64_t> low(static_cast<size_t>(rank), 0), high(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    low[static_cast<size_t>(axes[i])] = pads[i];
    high[static_cast<size_t>(axes[i])] = pads[i + axes.size()];
  }
  int fill = -1;
  if (mode == ir::PadMode::kConstant) {
    const bool given = node.input_size() > 2 && !node.input(2).empty();
    if (given) {
      fill = value(node.input(2), label);
    } else {
      const DType dtype = g.tensor(x).dtype;
      const std::string zero = name + ".zero";
      fill = g.addConstant(zero, {}, dtype);
      m_result.initializers.emplace(zero, ir::TensorValue::zeros({}, dtype));
    }
    if (g.tensor(fill).dtype != g.tensor(x).dtype)
      invalid(label + ": Pad's constant_value has another type than its input");
  }
  define(node, g.pad(name, x, low, high, mode, fill));
}

void Importer::importSlice(const onnx::NodeProto& node, const std::string& label) {
  ir::Graph& g = m_result.graph;
  const int x = value(node.input(0), label);
  std::vector<int64_t> first;
  std::vector<int64_t> stride;
  ir::Shape out;
  sliceGeometry(node, label, g.tensor(x).shape, first, stride, out);
  define(node, g.stridedSlice(opName(node), x, first, stride, out));
}

void Importer::sliceGeometry(const onnx::NodeProto& node, const std::string& label, const ir::Shape& shape,
                             std::vector<int64_t>& first, std::vector<int64_t>& stride, ir::Shape& out) const {
  expectInputCount(node, 3, 5, label);
  rejectAttributesExcept(node, {});
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
  first.assign(shape.size(), 0);
  stride.assign(shape.size(), 1);
  out = shape;
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
}

void Importer::importSplit(const onnx::NodeProto& node, const std::string& label) {
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

void Importer::importGelu(const onnx::NodeProto& node, const std::string& label) {
  expectInputCount(node, 1, 1, label);
  rejectAttributesExcept(node, {"approximate"});
  const auto* approximate = attribute(node, "approximate");
  const std::string mode = approximate ? approximate->s() : "none";
  if (mode != "none" && mode != "tanh") invalid(label + ": unknown approximate '" + mode + "' (none or tanh)");
  ir::Graph& g = m_result.graph;
  const std::string name = opName(node);
  const int x = value(node.input(0), label);
  const DType dtype = g.tensor(x).dtype;
  int inner = -1;
  if (mode == "none") {
    inner = g.unary(ir::UnaryKind::kErf, name + ".erf",
                    g.binary(ir::OpType::kMul, name + ".scaled", x,
                             scalarConstant(name + ".inv_sqrt2", dtype, 0.70710678118654752f)));
  } else {
    const int cube = g.binary(ir::OpType::kMul, name + ".cube", g.binary(ir::OpType::kMul, name + ".square", x, x), x);
    const int sum =
        g.add(name + ".sum", x,
              g.binary(ir::OpType::kMul, name + ".cubic", cube, scalarConstant(name + ".c", dtype, 0.044715f)));
    inner = g.unary(ir::UnaryKind::kTanh, name + ".tanh",
                    g.binary(ir::OpType::kMul, name + ".scaled", sum,
                             scalarConstant(name + ".sqrt_2_over_pi", dtype, 0.79788456080286536f)));
  }
  const int one_plus = g.add(name + ".one_plus", inner, scalarConstant(name + ".one", dtype, 1.0f));
  const int half_x = g.binary(ir::OpType::kMul, name + ".half_x", x, scalarConstant(name + ".half", dtype, 0.5f));
  define(node, g.binary(ir::OpType::kMul, name, half_x, one_plus));
}

void Importer::importPRelu(const onnx::NodeProto& node, const std::string& label) {
  expectInputCount(node, 2, 2, label);
  rejectAttributesExcept(node, {});
  ir::Graph& g = m_result.graph;
  const std::string name = opName(node);
  const int x = value(node.input(0), label);
  const int slope = value(node.input(1), label);
  const ir::Shape& shape = g.tensor(x).shape;
  // Unidirectional broadcasting: the slope takes x's shape, never the other way round.
  if (ir::broadcastShapes(shape, g.tensor(slope).shape) != shape) {
    invalid(label + ": slope of shape " + ir::shapeToString(g.tensor(slope).shape) +
            " does not broadcast to X's shape " + ir::shapeToString(shape));
  }
  const int positive = g.relu(name + ".positive", x);
  const int negated = g.relu(name + ".negated", g.scale(name + ".minus_x", x, -1.0));  // -min(x, 0)
  define(node,
         g.binary(ir::OpType::kSub, name, positive, g.binary(ir::OpType::kMul, name + ".sloped", slope, negated)));
}

void Importer::importDropout(const onnx::NodeProto& node, const std::string& label) {
  expectInputCount(node, 1, 3, label);
  rejectAttributesExcept(node, {"seed"});
  ir::Graph& g = m_result.graph;
  bool training = false;
  if (node.input_size() == 3 && !node.input(2).empty()) {
    const std::vector<int64_t> mode = constantInts(node, 2, label);
    training = !mode.empty() && mode[0] != 0;
  }
  if (training) {
    float ratio = 0.5f;
    if (node.input_size() >= 2 && !node.input(1).empty()) {
      const ir::TensorValue* given = constantValue(node.input(1));
      if (given == nullptr || given->floats.size() != 1) {
        throw Error(ErrorKind::kUnsupported, label + ": a training-mode Dropout needs a constant ratio");
      }
      ratio = given->floats[0];
    }
    if (ratio > 0.0f) {
      throw Error(ErrorKind::kUnsupported, label + ": training-mode Dropout with ratio " + std::to_string(ratio) +
                                               " draws a random mask, which tpusim does not model (export in "
                                               "eval mode, or with ratio 0)");
    }
  }
  if (node.output_size() < 1 || node.output_size() > 2) invalid(label + " has a wrong number of outputs");
  const std::string name = opName(node);
  const int x = value(node.input(0), label);
  defineOutput(node, 0, g.reshape(name, x, g.tensor(x).shape));  // the identity, as a view
  if (node.output_size() == 2 && !node.output(1).empty()) {
    ir::TensorValue mask{g.tensor(x).shape, DType::kBool, {}, {}};
    mask.ints.assign(static_cast<size_t>(ir::elementCount(mask.shape)), 1);
    defineConstant(node, 1, std::move(mask));
  }
}

// ReduceSum, ReduceMean, ReduceMax, ReduceMin, and ReduceSumSquare, ReduceL1, ReduceL2 and
// ReduceLogSumExp as a Reduce of x^2, |x|, x^2 then a square root, e^x then a log (ONNX's
// definitions, log(sum(e^x)) unshifted as its reference). The axes are the `axes` attribute
// (opset 13's ReduceMean, Max, Min and the rest) or the constant second input (ReduceSum, and
// every reduction from opset 18); none reduces every axis, or nothing with noop_with_empty_axes.
void Importer::importReduce(const onnx::NodeProto& node, const std::string& label) {
  const std::string& type = node.op_type();
  ir::Graph& g = m_result.graph;
  expectInputCount(node, 1, 2, label);
  rejectAttributesExcept(node, {"axes", "keepdims", "noop_with_empty_axes"});
  const std::string name = opName(node);
  int x = value(node.input(0), label);
  const auto rank = static_cast<int64_t>(g.tensor(x).shape.size());
  std::vector<int64_t> axes;
  if (const auto* attr = attribute(node, "axes")) axes.assign(attr->ints().begin(), attr->ints().end());
  if (node.input_size() == 2 && !node.input(1).empty()) axes = constantInts(node, 1, label);
  if (axes.empty() && intAttribute(node, "noop_with_empty_axes", 0) != 0) {
    define(node, g.reshape(name, x, g.tensor(x).shape));  // reduces nothing
    return;
  }
  for (int64_t& axis : axes) axis = normalizeAxis(axis, rank, label);
  const bool keepdims = intAttribute(node, "keepdims", 1) != 0;
  ir::Reduction reduction = ir::Reduction::kSum;
  if (type == "ReduceMean") reduction = ir::Reduction::kMean;
  if (type == "ReduceMax") reduction = ir::Reduction::kMax;
  if (type == "ReduceMin") reduction = ir::Reduction::kMin;
  if (type == "ReduceSumSquare" || type == "ReduceL2") x = g.binary(ir::OpType::kMul, name + ".square", x, x);
  if (type == "ReduceL1") x = g.unary(ir::UnaryKind::kAbs, name + ".abs", x);
  if (type == "ReduceLogSumExp") x = g.unary(ir::UnaryKind::kExp, name + ".exp", x);
  const bool then = type == "ReduceL2" || type == "ReduceLogSumExp" || type == "ReduceLogSum";
  int out = g.reduce(then ? name + ".sum" : name, x, reduction, axes, keepdims);
  if (type == "ReduceL2") out = g.unary(ir::UnaryKind::kSqrt, name, out);
  if (type == "ReduceLogSumExp" || type == "ReduceLogSum") out = g.unary(ir::UnaryKind::kLog, name, out);
  define(node, out);
}

}  // namespace tpusim::onnx_detail
