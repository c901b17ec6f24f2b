// Conv and ConvTranspose, 1-D, 2-D and 3-D (onnx_import_conv3d.cpp). A 1-D one runs as the 2-D one over [N, C, 1, L] (a
// unit height: strides, dilations and pads 1, 1 and 0 along it), between two views. A
// ConvTranspose is the input gradient of the Conv it transposes (Graph::convTranspose): the
// same kernels, MXU lowering and costs, and its own gradients are that Conv's.
#include <algorithm>

#include "frontend/import/onnx_importer.hpp"

namespace tpusim::onnx_detail {

namespace {

// A 1-D geometry list with the unit height's `unit` before each value: strides [s] become
// [1, s]; pads [begin, end] become [0, begin, 0, end].
std::vector<int64_t> lifted(const std::vector<int64_t>& values, int64_t unit) {
  std::vector<int64_t> out;
  for (int64_t value : values) out.insert(out.end(), {unit, value});
  return out;
}

}  // namespace

Importer::ConvAttributes Importer::convAttributes(const onnx::NodeProto& node, const std::string& label,
                                                  const ir::Shape& x_shape, const ir::Shape& w_shape) const {
  const size_t rank = x_shape.size() - 2;
  if (x_shape.size() != w_shape.size() || rank < 1 || rank > 3) {
    throw Error(ErrorKind::kUnsupported, label + ": " + node.op_type() + " of " + ir::shapeToString(x_shape) + " by " +
                                             ir::shapeToString(w_shape) +
                                             ": only 1-D, 2-D and 3-D ones are supported ([N, C, L], [N, C, H, W] or "
                                             "[N, C, D, H, W])");
  }
  ConvAttributes a;
  a.rank = rank;
  a.kernel.assign(w_shape.begin() + 2, w_shape.end());
  if (intsAttribute(node, "kernel_shape", a.kernel) != a.kernel)
    invalid(label + ": kernel_shape does not match the weights");
  a.strides = intsAttribute(node, "strides", std::vector<int64_t>(rank, 1));
  a.dilations = intsAttribute(node, "dilations", std::vector<int64_t>(rank, 1));
  a.pads = intsAttribute(node, "pads", std::vector<int64_t>(2 * rank, 0));
  a.group = intAttribute(node, "group", 1);
  if (a.strides.size() != rank || a.dilations.size() != rank || a.pads.size() != 2 * rank) {
    invalid(label + ": strides, dilations and pads must have " + std::to_string(rank) + ", " + std::to_string(rank) +
            " and " + std::to_string(2 * rank) + " entries");
  }
  const auto* auto_pad = attribute(node, "auto_pad");
  a.auto_pad = auto_pad ? auto_pad->s() : "NOTSET";
  if (a.auto_pad != "NOTSET" && a.auto_pad != "SAME_UPPER" && a.auto_pad != "SAME_LOWER" && a.auto_pad != "VALID") {
    invalid(label + ": unknown auto_pad '" + a.auto_pad + "'");
  }
  return a;
}

ir::ConvGeometry Importer::geometry2d(const ConvAttributes& a) {
  ir::ConvGeometry g;
  g.group = a.group;
  if (a.rank == 2) {
    g.strides = a.strides;
    g.dilations = a.dilations;
    g.pads = a.pads;
  } else {
    g.strides = lifted(a.strides, 1);
    g.dilations = lifted(a.dilations, 1);
    g.pads = lifted(a.pads, 0);
  }
  return g;
}

int Importer::as2d(int tensor, const std::string& name) {
  ir::Graph& g = m_result.graph;
  ir::Shape shape = g.tensor(tensor).shape;
  if (shape.size() == 4) return tensor;
  shape.insert(shape.begin() + 2, 1);
  return g.reshape(name, tensor, shape);
}

int Importer::withBias(const onnx::NodeProto& node, const std::string& label, const std::string& name, int out,
                       size_t rank, int64_t channels) {
  if (node.input_size() < 3 || node.input(2).empty()) return out;
  ir::Graph& g = m_result.graph;
  const int bias = value(node.input(2), label);
  ir::Shape per_channel(rank + 1, 1);
  per_channel[0] = channels;
  return g.add(name + ".bias", out, g.reshape(name + ".bias_shape", bias, per_channel));
}

int Importer::convolved(const onnx::NodeProto& node, const std::string& label, const std::string& name, int x, int w) {
  ir::Graph& g = m_result.graph;
  const ir::Shape x_shape = g.tensor(x).shape, w_shape = g.tensor(w).shape;
  ConvAttributes a = convAttributes(node, label, x_shape, w_shape);
  if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
    samePadding(a.auto_pad, x_shape, a.kernel, a.strides, a.dilations, a.pads);
  } else if (a.auto_pad == "VALID") {
    std::fill(a.pads.begin(), a.pads.end(), 0);
  }
  if (a.rank == 3) return conv3d(name, x, w, a);
  int out = g.conv(a.rank == 2 ? name : name + ".2d", as2d(x, name + ".x_2d"), as2d(w, name + ".w_2d"), geometry2d(a));
  if (a.rank == 1) out = g.reshape(name, out, {x_shape[0], w_shape[0], g.tensor(out).shape[3]});
  return out;
}

void Importer::importConv(const onnx::NodeProto& node, const std::string& label) {
  expectInputCount(node, 2, 3, label);
  rejectAttributesExcept(node, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
  ir::Graph& g = m_result.graph;
  const int x = value(node.input(0), label);
  const int w = value(node.input(1), label);
  const std::string name = opName(node);
  const int out = convolved(node, label, name, x, w);
  define(node, withBias(node, label, name, out, g.tensor(out).shape.size() - 2, g.tensor(w).shape[0]));
}

// ONNX's output shape: out = stride (in - 1) + output_padding + dilation (kernel - 1) + 1 - pads;
// with `output_shape` (or SAME auto_pad, out = in stride) the pads follow from it, the larger
// half at the end for SAME_UPPER and at the beginning otherwise; an output_shape beyond what
// the kernel reaches is zeros at the end (a Pad after the transposed convolution).
void Importer::importConvTranspose(const onnx::NodeProto& node, const std::string& label) {
  expectInputCount(node, 2, 3, label);
  rejectAttributesExcept(
      node, {"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"});
  ir::Graph& g = m_result.graph;
  const int x = value(node.input(0), label);
  const int w = value(node.input(1), label);
  const ir::Shape x_shape = g.tensor(x).shape, w_shape = g.tensor(w).shape;
  ConvAttributes a = convAttributes(node, label, x_shape, w_shape);
  const size_t rank = a.rank;
  const std::vector<int64_t> output_padding = intsAttribute(node, "output_padding", std::vector<int64_t>(rank, 0));
  std::vector<int64_t> output_shape = intsAttribute(node, "output_shape", {});
  if (output_padding.size() != rank) invalid(label + ": output_padding must have " + std::to_string(rank) + " entries");
  if (output_shape.size() == rank + 2) output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
  if (!output_shape.empty() && output_shape.size() != rank) {
    invalid(label + ": output_shape must have " + std::to_string(rank) + " entries");
  }
  if (output_shape.empty() && (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER")) {
    for (size_t d = 0; d < rank; ++d) output_shape.push_back(x_shape[2 + d] * a.strides[d]);
  }
  if (a.auto_pad == "VALID") std::fill(a.pads.begin(), a.pads.end(), 0);
  ir::Shape out_shape = {x_shape[0], w_shape[1] * a.group};
  std::vector<int64_t> beyond(rank + 2, 0);  // per dimension: zeros past what the kernel reaches
  for (size_t d = 0; d < rank; ++d) {
    const int64_t full =
        a.strides[d] * (x_shape[2 + d] - 1) + output_padding[d] + a.dilations[d] * (a.kernel[d] - 1) + 1;
    if (!output_shape.empty()) {
      const int64_t total = std::max<int64_t>(0, full - output_shape[d]);
      beyond[2 + d] = std::max<int64_t>(0, output_shape[d] - full);
      const int64_t half = total / 2;
      a.pads[d] = a.auto_pad == "SAME_UPPER" ? half : total - half;
      a.pads[d + rank] = total - a.pads[d];
    }
    const int64_t size = full - a.pads[d] - a.pads[d + rank];
    if (size < 1) invalid(label + ": the pads leave no output along dimension " + std::to_string(d + 2));
    out_shape.push_back(size);
  }
  for (size_t d = 0; d < rank; ++d) {
    if (output_padding[d] < 0 || output_padding[d] >= std::max(a.strides[d], a.dilations[d])) {
      invalid(label + ": output_padding must be below the stride or the dilation");
    }
  }
  const std::string name = opName(node);
  const bool padded = std::any_of(beyond.begin(), beyond.end(), [](int64_t n) { return n > 0; });
  const std::string made = padded ? name + ".conv" : name;
  ir::Shape out_2d = out_shape;
  if (rank == 1) out_2d.insert(out_2d.begin() + 2, 1);
  int out = rank == 3 ? convTranspose3d(made, x, w, out_shape, a)
                      : g.convTranspose(rank == 2 ? made : made + ".2d", as2d(x, name + ".x_2d"),
                                        as2d(w, name + ".w_2d"), out_2d, geometry2d(a));
  if (rank == 1) out = g.reshape(made, out, out_shape);
  if (padded) {
    const DType dtype = g.tensor(out).dtype;
    const int zero = g.addConstant(name + ".zero", {}, dtype);
    m_result.initializers.emplace(name + ".zero", ir::TensorValue::zeros({}, dtype));
    out = g.pad(name, out, std::vector<int64_t>(rank + 2, 0), beyond, ir::PadMode::kConstant, zero);
  }
  define(node, withBias(node, label, name, out, rank, out_shape[1]));
}

}  // namespace tpusim::onnx_detail
