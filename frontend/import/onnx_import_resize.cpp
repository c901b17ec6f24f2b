// Resize (and opset-9 Upsample's successor) in nearest, linear and cubic modes, axis by axis as
// gathers of compile-time indices (ONNX's coordinate transformation and rounding, evaluated
// here): nearest is one Gather per resized axis; linear two, weighted by constant fractions
// and added (separable, as ONNX's bilinear is); cubic four, the neighbours at floor(x) - 1 ..
// floor(x) + 2 (clamped to the edge) weighted by Keys' cubic convolution with cubic_coeff_a
// (with exclude_outside, the weights of neighbours outside the input are 0 and the rest
// renormalized). Gather's DMA lowering, kernels and gradient carry over. tf_crop_and_resize,
// half_pixel_symmetric, antialias and keep_aspect_ratio_policy other than stretch are unsupported.
#include <array>
#include <cmath>

#include "frontend/import/onnx_importer.hpp"

namespace tpusim::onnx_detail {

namespace {

// Where output index `i` samples the input of `in` elements, resized by `scale` to
// in x scale elements (not rounded down to the output's size, as ONNX's reference computes).
double sourceCoordinate(const std::string& mode, int64_t i, int64_t in, double scale) {
  const auto x = static_cast<double>(i);
  const double resized = static_cast<double>(in) * scale;
  if (mode == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel") return resized > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners") return resized == 1 ? 0.0 : x * static_cast<double>(in - 1) / (resized - 1);
  return x / scale;  // asymmetric
}

// Keys' cubic convolution weights of the four neighbours of a point `t` past the second
// (t in [0, 1)), with coefficient a (ONNX's cubic_coeff_a).
std::array<double, 4> cubicWeights(double t, double a) {
  const auto far = [a](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };  // 1 <= d < 2
  const auto near = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };       // 0 <= d < 1
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

int64_t nearestIndex(const std::string& rounding, double x, int64_t in) {
  double picked = 0;
  const double below = std::floor(x);
  const bool half = x - below == 0.5;
  if (rounding == "floor") {
    picked = below;
  } else if (rounding == "ceil") {
    picked = std::ceil(x);
  } else if (half) {
    picked = rounding == "round_prefer_ceil" ? below + 1 : below;
  } else {
    picked = std::round(x);
  }
  return std::clamp<int64_t>(static_cast<int64_t>(picked), 0, in - 1);
}

}  // namespace

std::vector<double> Importer::constantFloats(const onnx::NodeProto& node, int index, const std::string& label) const {
  const std::string& name = node.input(index);
  const ir::TensorValue* constant = constantValue(name);
  if (constant == nullptr) {
    const auto init = m_result.initializers.find(name);
    if (init != m_result.initializers.end()) constant = &init->second;
  }
  if (constant == nullptr || !ir::TensorValue::isFloating(constant->dtype)) {
    throw Error(ErrorKind::kUnsupported, label + ": input '" + name +
                                             "' must be a constant float tensor (an initializer or a Constant): "
                                             "tpusim compiles static shapes");
  }
  return constant->floats;
}

int Importer::cubicResized(const onnx::NodeProto& node, const std::string& name, const std::string& part,
                           const std::string& result, int x, int64_t axis, int64_t in, int64_t out, double scale,
                           const std::string& transform, const ir::Shape& along) {
  ir::Graph& g = m_result.graph;
  const double a = floatAttribute(node, "cubic_coeff_a", -0.75f);
  const bool exclude = intAttribute(node, "exclude_outside", 0) != 0;
  const DType dtype = g.tensor(x).dtype;
  std::array<ir::TensorValue, 4> index, weight;
  for (size_t k = 0; k < 4; ++k) {
    index[k] = ir::TensorValue{{out}, DType::kInt64, {}, {}};
    weight[k] = ir::TensorValue{along, dtype, {}, {}};
  }
  for (int64_t o = 0; o < out; ++o) {
    const double source = sourceCoordinate(transform, o, in, scale);
    const double below = std::floor(source);
    std::array<double, 4> w = cubicWeights(source - below, a);
    double total = 0;
    for (size_t k = 0; k < 4; ++k) {
      const int64_t at = static_cast<int64_t>(below) - 1 + static_cast<int64_t>(k);
      if (exclude && (at < 0 || at >= in)) w[k] = 0;
      total += w[k];
      index[k].ints.push_back(std::clamp<int64_t>(at, 0, in - 1));
    }
    for (size_t k = 0; k < 4; ++k) weight[k].floats.push_back(exclude ? w[k] / total : w[k]);
  }
  int sum = -1;
  for (size_t k = 0; k < 4; ++k) {
    const std::string tap = name + "." + part + ".tap" + std::to_string(k);
    const int gathered = g.gather(tap, x, constantTensor(tap + ".index", std::move(index[k])), axis);
    const int term =
        g.binary(ir::OpType::kMul, tap + ".weighted", gathered, constantTensor(tap + ".weight", std::move(weight[k])));
    sum = sum < 0 ? term : g.add(k == 3 ? result : tap + ".sum", sum, term);
  }
  return sum;
}

void Importer::importResize(const onnx::NodeProto& node, const std::string& label) {
  expectInputCount(node, 1, 4, label);
  rejectAttributesExcept(node,
                         {"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
                          "extrapolation_value", "antialias", "axes", "keep_aspect_ratio_policy"});
  ir::Graph& g = m_result.graph;
  const std::string name = opName(node);
  int x = value(node.input(0), label);
  const ir::Shape shape = g.tensor(x).shape;
  const auto rank = static_cast<int64_t>(shape.size());
  const auto text = [&](const char* attr, const char* fallback) {
    const auto* a = attribute(node, attr);
    return a ? a->s() : std::string(fallback);
  };
  const std::string mode = text("mode", "nearest");
  const std::string transform = text("coordinate_transformation_mode", "half_pixel");
  const std::string rounding = text("nearest_mode", "round_prefer_floor");
  const auto unsupported = [&](const std::string& what) {
    throw Error(ErrorKind::kUnsupported, label + ": Resize " + what +
                                             " is not supported (nearest, linear and cubic modes, "
                                             "half_pixel, pytorch_half_pixel, align_corners and asymmetric)");
  };
  if (mode != "nearest" && mode != "linear" && mode != "cubic") unsupported("mode '" + mode + "'");
  if (transform != "half_pixel" && transform != "pytorch_half_pixel" && transform != "align_corners" &&
      transform != "asymmetric") {
    unsupported("coordinate_transformation_mode '" + transform + "'");
  }
  if (rounding != "round_prefer_floor" && rounding != "round_prefer_ceil" && rounding != "floor" &&
      rounding != "ceil") {
    invalid(label + ": unknown nearest_mode '" + rounding + "'");
  }
  if (intAttribute(node, "antialias", 0) != 0) unsupported("antialias");
  if (text("keep_aspect_ratio_policy", "stretch") != "stretch") unsupported("keep_aspect_ratio_policy");
  std::vector<int64_t> axes = intsAttribute(node, "axes", {});
  if (axes.empty()) {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  for (int64_t& axis : axes) axis = normalizeAxis(axis, rank, label);
  // The output size and the scale of each listed axis, from `scales` or `sizes`.
  const bool has_scales = node.input_size() > 2 && !node.input(2).empty();
  const bool has_sizes = node.input_size() > 3 && !node.input(3).empty();
  if (has_scales == has_sizes) invalid(label + ": Resize needs one of scales and sizes");
  std::vector<int64_t> out(axes.size());
  std::vector<double> scale(axes.size());
  if (has_scales) {
    const std::vector<double> scales = constantFloats(node, 2, label);
    if (scales.size() != axes.size()) invalid(label + ": Resize has " + std::to_string(scales.size()) + " scales");
    for (size_t i = 0; i < axes.size(); ++i) {
      if (!(scales[i] > 0)) invalid(label + ": Resize's scales must be positive");
      scale[i] = scales[i];
      out[i] = static_cast<int64_t>(std::floor(static_cast<double>(shape[static_cast<size_t>(axes[i])]) * scales[i]));
    }
  } else {
    const std::vector<int64_t> sizes = constantInts(node, 3, label);
    if (sizes.size() != axes.size()) invalid(label + ": Resize has " + std::to_string(sizes.size()) + " sizes");
    for (size_t i = 0; i < axes.size(); ++i) {
      out[i] = sizes[i];
      scale[i] = static_cast<double>(sizes[i]) / static_cast<double>(shape[static_cast<size_t>(axes[i])]);
    }
  }
  const DType dtype = g.tensor(x).dtype;
  const auto constant = [&](const std::string& part, ir::TensorValue value) {
    const int id = g.addConstant(name + "." + part, value.shape, value.dtype);
    m_result.initializers.emplace(name + "." + part, std::move(value));
    return id;
  };
  std::vector<size_t> resized;  // the listed axes whose size or sampling changes
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t in = shape[static_cast<size_t>(axes[i])];
    if (out[i] < 1) invalid(label + ": Resize leaves axis " + std::to_string(axes[i]) + " empty");
    if (out[i] != in || scale[i] != 1.0) resized.push_back(i);
  }
  if (resized.empty()) {
    define(node, g.reshape(name, x, shape));
    return;
  }
  for (size_t i : resized) {
    const int64_t axis = axes[i], in = shape[static_cast<size_t>(axis)];
    const std::string part = "axis" + std::to_string(axis);
    const std::string result = i == resized.back() ? name : name + "." + part;
    ir::TensorValue low{{out[i]}, DType::kInt64, {}, {}}, high = low;
    ir::TensorValue weight{{}, dtype, {}, {}};
    ir::Shape along(static_cast<size_t>(rank), 1);
    along[static_cast<size_t>(axis)] = out[i];
    weight.shape = along;
    for (int64_t o = 0; o < out[i]; ++o) {
      const double source = sourceCoordinate(transform, o, in, scale[i]);
      if (mode == "nearest") {
        low.ints.push_back(nearestIndex(rounding, source, in));
      } else {
        const double below = std::floor(source);
        low.ints.push_back(std::clamp<int64_t>(static_cast<int64_t>(below), 0, in - 1));
        high.ints.push_back(std::clamp<int64_t>(static_cast<int64_t>(below) + 1, 0, in - 1));
        weight.floats.push_back(source - below);
      }
    }
    if (mode == "nearest") {
      x = g.gather(result, x, constant(part + ".index", std::move(low)), axis);
      continue;
    }
    if (mode == "cubic") {
      x = cubicResized(node, name, part, result, x, axis, in, out[i], scale[i], transform, along);
      continue;
    }
    const int t = constant(part + ".fraction", weight);
    for (double& f : weight.floats) f = 1.0 - f;
    const int keep = constant(part + ".complement", std::move(weight));
    const int a = g.gather(name + "." + part + ".low", x, constant(part + ".low_index", std::move(low)), axis);
    const int b = g.gather(name + "." + part + ".high", x, constant(part + ".high_index", std::move(high)), axis);
    x = g.add(result, g.binary(ir::OpType::kMul, name + "." + part + ".low_part", a, keep),
              g.binary(ir::OpType::kMul, name + "." + part + ".high_part", b, t));
  }
  define(node, x);
}

}  // namespace tpusim::onnx_detail
