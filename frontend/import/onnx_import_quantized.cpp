// ONNX's quantized ops as a TPU runs them. The products are int8 MatMuls and Convs on the MXU,
// accumulating exactly into int32; a zero point is a rank-one correction of the product,
//   (a - za)(b - zb) = a b - zb (a 1) - za (1 b) + K za zb,
// whose row and column sums (a 1, 1 b) are vector-unit reductions, exact in float32, and only
// where the zero point is not known to be 0. A uint8 operand enters the MXU as int8
// less 128, which moves its zero point by -128. A convolution pads (x - zx) with zeros, so x's
// correction is zx times the convolution of w over a tensor of ones the input's extent (at
// batch 1), and w's is zw times x convolved with a kernel of ones; both on the MXU, in int8. Requantizing is float32
// vector work:
//   QuantizeLinear         saturate(round(x / scale) + zp), halves to even; per tensor, or per `axis`
//   DequantizeLinear       (x - zp) scale
//   DynamicQuantizeLinear  scale = (max(x, 0) - min(x, 0)) / 255, zp = round(saturate(-min(x, 0) / scale)),
//                          then QuantizeLinear to uint8
//   MatMulInteger, ConvInteger    the int32 products above
//   QLinearMatMul, QLinearConv    the product (plus QLinearConv's int32 bias) times
//                                 a_scale b_scale / y_scale, quantized with y's zero point
#include "frontend/import/onnx_importer.hpp"

namespace tpusim::onnx_detail {

namespace {

std::pair<double, double> quantizedRange(DType dtype, const std::string& label) {
  if (dtype == DType::kUInt8) return {0, 255};
  if (dtype == DType::kInt8) return {-128, 127};
  throw Error(ErrorKind::kUnsupported, label + ": quantized values must be int8 or uint8");
}

}  // namespace

void Importer::importQuantized(const onnx::NodeProto& node, const std::string& label) {
  const std::string& type = node.op_type();
  ir::Graph& g = m_result.graph;
  const std::string name = opName(node);
  int made = 0;
  const auto scalar = [&](DType dtype, double v) {
    ir::TensorValue t = ir::TensorValue::zeros({}, dtype);
    if (ir::TensorValue::isFloating(dtype)) {
      t.floats[0] = v;
    } else {
      t.ints[0] = static_cast<int64_t>(v);
    }
    return constantTensor(name + ".constant" + std::to_string(made++), std::move(t));
  };
  const auto optional = [&](int index) {
    return node.input_size() > index && !node.input(index).empty() ? value(node.input(index), label) : -1;
  };
  // A scalar parameter as a scalar; a 1-D one (per row, column or channel) placed at `axis` (negative: from
  // the end) of a rank-`rank` tensor.
  const auto along = [&](int param, int64_t axis, size_t rank, const std::string& part) {
    const ir::Shape& shape = g.tensor(param).shape;
    if (ir::elementCount(shape) == 1) return g.reshape(name + "." + part, param, {});
    if (shape.size() != 1) invalid(label + ": " + part + " must be a scalar or 1-D");
    ir::Shape placed(rank, 1);
    placed[static_cast<size_t>(normalizeAxis(axis, static_cast<int64_t>(rank), label))] = shape[0];
    return g.reshape(name + "." + part, param, placed);
  };
  // round(v) + zp, saturated to `dtype`'s range, as `dtype`; v and zp of float type `ftype`.
  const auto quantize = [&](const std::string& part, int v, int zp, DType dtype) {
    const DType ftype = g.tensor(v).dtype;
    const auto [low, high] = quantizedRange(dtype, label);
    int q = g.unary(ir::UnaryKind::kRound, part + ".rounded", v);
    if (zp >= 0) q = g.add(part + ".shifted", q, g.cast(part + ".zero_point", zp, ftype));
    q = g.binary(ir::OpType::kMaximum, part + ".low", q, scalar(ftype, low));
    q = g.binary(ir::OpType::kMinimum, part + ".high", q, scalar(ftype, high));
    return g.cast(part, q, dtype);
  };
  // Whether input `index`, a zero point of a `dtype` operand, is known to be 0 (absent, or a constant of zeros).
  const auto knownZero = [&](int index) {
    if (node.input_size() <= index || node.input(index).empty()) return true;
    const ir::TensorValue* known = constantValue(node.input(index));
    if (known == nullptr) return false;
    return std::all_of(known->ints.begin(), known->ints.end(), [](int64_t v) { return v == 0; });
  };
  // The operand as int8 and its zero point as int32 (-1 when it is known to be 0).
  struct Operand {
    int values = -1, zero_point = -1;
  };
  const auto asInt8 = [&](int t, int zp_index, const std::string& part) {
    const DType dtype = g.tensor(t).dtype;
    quantizedRange(dtype, label);
    const int zp = knownZero(zp_index) ? -1 : value(node.input(zp_index), label);
    if (zp >= 0 && g.tensor(zp).dtype != dtype) invalid(label + ": " + part + "'s zero point has another type");
    if (dtype == DType::kInt8) return Operand{t, zp < 0 ? -1 : g.cast(part + ".zero_point", zp, DType::kInt32)};
    const int shifted = g.binary(ir::OpType::kSub, part + ".centred", g.cast(part + ".int32", t, DType::kInt32),
                                 scalar(DType::kInt32, 128));
    const int zero_point =
        zp < 0 ? scalar(DType::kInt32, -128)
               : g.binary(ir::OpType::kSub, part + ".zero_point", g.cast(part + ".zero_point32", zp, DType::kInt32),
                          scalar(DType::kInt32, 128));
    return Operand{g.cast(part + ".int8", shifted, DType::kInt8), zero_point};
  };
  const auto ones = [&](const std::string& part, ir::Shape shape) {
    ir::TensorValue all = ir::TensorValue::zeros(shape, DType::kInt8);
    std::fill(all.ints.begin(), all.ints.end(), 1);
    return constantTensor(name + "." + part, std::move(all));
  };
  const auto sub = [&](const std::string& part, int a, int b) { return g.binary(ir::OpType::kSub, part, a, b); };
  const auto mul = [&](const std::string& part, int a, int b) { return g.binary(ir::OpType::kMul, part, a, b); };

  // (a - za)(b - zb) in int32, a [..., M, K] by b [..., K, N].
  const auto integerMatMul = [&](int a_in, int za_index, int b_in, int zb_index) {
    const Operand a = asInt8(a_in, za_index, name + ".a"), b = asInt8(b_in, zb_index, name + ".b");
    const ir::Shape a_shape = g.tensor(a.values).shape;
    if (a_shape.size() < 2 || g.tensor(b.values).shape.size() < 2) invalid(label + ": operands must be 2-D or more");
    const int64_t k = a_shape.back();
    int out = g.matmul(name + ".product", a.values, b.values, false, false);
    // za per row [M] as [M, 1]; zb per column [N] broadcasts along the last dimension as it is.
    const int za = a.zero_point < 0 ? -1 : along(a.zero_point, 0, 2, "a_zero_point_rows");
    const int zb = b.zero_point < 0 ? -1 : along(b.zero_point, 0, 1, "b_zero_point_columns");
    // The row and column sums on the vector unit, in float32: exact, as |sum| <= 128 K < 2^24.
    if (k >= (int64_t{1} << 17)) {
      throw Error(ErrorKind::kUnsupported, label + ": a zero point's correction over K = " + std::to_string(k) +
                                               " would round in float32 (K < 131072 is exact)");
    }
    const auto sums = [&](const std::string& part, int v, int64_t axis) {
      const int as_float = g.cast(part + ".float", v, DType::kF32);
      const auto rank = static_cast<int64_t>(g.tensor(v).shape.size());
      return g.cast(part, g.reduce(part + ".sum", as_float, ir::Reduction::kSum, {rank + axis}, true), DType::kInt32);
    };
    if (zb >= 0) {
      const int row_sums = sums(name + ".row_sums", a.values, -1);
      out = sub(name + ".b_corrected", out, mul(name + ".b_correction", row_sums, zb));
    }
    if (za >= 0) {
      const int column_sums = sums(name + ".column_sums", b.values, -2);
      out = sub(name + ".a_corrected", out, mul(name + ".a_correction", za, column_sums));
    }
    if (za >= 0 && zb >= 0) {
      out =
          g.add(name + ".corrected", out,
                mul(name + ".both", mul(name + ".zero_points", za, zb), scalar(DType::kInt32, static_cast<double>(k))));
    }
    return out;
  };
  // (x - zx) * (w - zw) in int32 with the node's Conv attributes; zx a scalar, zw one per output channel.
  const auto integerConv = [&](int x_in, int zx_index, int w_in, int zw_index) {
    const Operand x = asInt8(x_in, zx_index, name + ".x"), w = asInt8(w_in, zw_index, name + ".w");
    if (x.zero_point >= 0 && ir::elementCount(g.tensor(x.zero_point).shape) != 1) {
      invalid(label + ": x's zero point must be a scalar");
    }
    const ir::Shape x_shape = g.tensor(x.values).shape, w_shape = g.tensor(w.values).shape;
    int out = convolved(node, label, name + ".product", x.values, w.values);
    const size_t rank = x_shape.size();
    const int zw = w.zero_point < 0 ? -1 : along(w.zero_point, 1, rank, "w_zero_point_channels");
    ir::Shape extent = x_shape;
    extent[0] = 1;
    if (zw >= 0) {
      const int window_sums = convolved(node, label, name + ".window_sums", x.values, ones("w_ones", w_shape));
      out = sub(name + ".w_corrected", out, mul(name + ".w_correction", window_sums, zw));
    }
    if (x.zero_point >= 0) {
      const int zx = g.reshape(name + ".x_zero_point_scalar", x.zero_point, {});
      const int reach = convolved(node, label, name + ".weights_in_reach", ones("x_ones", extent), w.values);
      out = sub(name + ".x_corrected", out, mul(name + ".x_correction", zx, reach));
      if (zw >= 0) {
        const int taps =
            convolved(node, label, name + ".taps_in_reach", ones("x_ones_both", extent), ones("w_ones_both", w_shape));
        out = g.add(name + ".corrected", out, mul(name + ".both", mul(name + ".zero_points", zx, zw), taps));
      }
    }
    return out;
  };

  if (type == "QuantizeLinear") {
    expectInputCount(node, 2, 3, label);
    rejectAttributesExcept(node, {"axis", "saturate"});
    const int x = value(node.input(0), label);
    const DType ftype = g.tensor(x).dtype;
    if (!isFloatingDType(ftype)) invalid(label + ": QuantizeLinear needs a float input");
    const auto rank = static_cast<int64_t>(g.tensor(x).shape.size());
    const int64_t axis = intAttribute(node, "axis", 1);  // read only by per-axis parameters
    int scale = along(value(node.input(1), label), axis, static_cast<size_t>(rank), "scale");
    if (g.tensor(scale).dtype != ftype) scale = g.cast(name + ".scale_as_x", scale, ftype);
    const int zp = optional(2);
    const int placed_zp = zp < 0 ? -1 : along(zp, axis, static_cast<size_t>(rank), "zero_point_placed");
    define(node, quantize(name, g.binary(ir::OpType::kDiv, name + ".scaled", x, scale), placed_zp,
                          zp < 0 ? DType::kUInt8 : g.tensor(zp).dtype));
  } else if (type == "DequantizeLinear") {
    expectInputCount(node, 2, 3, label);
    rejectAttributesExcept(node, {"axis"});
    const int x = value(node.input(0), label);
    const DType dtype = g.tensor(x).dtype;
    if (dtype != DType::kInt8 && dtype != DType::kUInt8 && dtype != DType::kInt32) {
      throw Error(ErrorKind::kUnsupported, label + ": DequantizeLinear of int8, uint8 or int32 only");
    }
    const auto rank = static_cast<int64_t>(g.tensor(x).shape.size());
    const int64_t axis = intAttribute(node, "axis", 1);  // read only by per-axis parameters
    const int scale = along(value(node.input(1), label), axis, static_cast<size_t>(rank), "scale");
    const DType ftype = g.tensor(scale).dtype;
    int y = g.cast(name + ".float", x, ftype);
    if (!knownZero(2)) {
      const int zp = along(value(node.input(2), label), axis, static_cast<size_t>(rank), "zero_point_placed");
      y = sub(name + ".centred", y, g.cast(name + ".zero_point_float", zp, ftype));
    }
    define(node, mul(name, y, scale));
  } else if (type == "DynamicQuantizeLinear") {
    expectInputs(node, 1, 1);
    rejectAttributesExcept(node, {});
    if (node.output_size() != 3) invalid(label + ": DynamicQuantizeLinear has three outputs");
    const int x = value(node.input(0), label);
    const DType ftype = g.tensor(x).dtype;
    if (ftype != DType::kF32) invalid(label + ": DynamicQuantizeLinear needs a float input");
    const int zero = scalar(ftype, 0);
    const int low =
        g.binary(ir::OpType::kMinimum, name + ".low", g.reduce(name + ".min", x, ir::Reduction::kMin, {}, false), zero);
    const int high = g.binary(ir::OpType::kMaximum, name + ".high",
                              g.reduce(name + ".max", x, ir::Reduction::kMax, {}, false), zero);
    const int scale = g.binary(ir::OpType::kDiv, name + ".scale", sub(name + ".span", high, low), scalar(ftype, 255));
    int zp = g.binary(ir::OpType::kDiv, name + ".zero_point_raw", sub(name + ".negated_low", zero, low), scale);
    zp = g.binary(ir::OpType::kMaximum, name + ".zero_point_low", zp, scalar(ftype, 0));
    zp = g.binary(ir::OpType::kMinimum, name + ".zero_point_high", zp, scalar(ftype, 255));
    zp = g.cast(name + ".zero_point", g.unary(ir::UnaryKind::kRound, name + ".zero_point_rounded", zp), DType::kUInt8);
    defineOutput(node, 0, quantize(name, g.binary(ir::OpType::kDiv, name + ".scaled", x, scale), zp, DType::kUInt8));
    defineOutput(node, 1, scale);
    defineOutput(node, 2, zp);
  } else if (type == "MatMulInteger") {
    expectInputCount(node, 2, 4, label);
    rejectAttributesExcept(node, {});
    define(node, integerMatMul(value(node.input(0), label), 2, value(node.input(1), label), 3));
  } else if (type == "ConvInteger") {
    expectInputCount(node, 2, 4, label);
    rejectAttributesExcept(node, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
    define(node, integerConv(value(node.input(0), label), 2, value(node.input(1), label), 3));
  } else {  // QLinearMatMul, QLinearConv
    const bool conv = type == "QLinearConv";
    expectInputCount(node, 8, conv ? 9 : 8, label);
    if (conv) {
      rejectAttributesExcept(node, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
    } else {
      rejectAttributesExcept(node, {});
    }
    const int a_in = value(node.input(0), label), b_in = value(node.input(3), label);
    int out = conv ? integerConv(a_in, 2, b_in, 5) : integerMatMul(a_in, 2, b_in, 5);
    const size_t rank = g.tensor(out).shape.size();
    if (conv && node.input_size() == 9 && !node.input(8).empty()) {
      const int bias = value(node.input(8), label);
      if (g.tensor(bias).dtype != DType::kInt32) invalid(label + ": QLinearConv's bias must be int32");
      out = g.add(name + ".biased", out, along(bias, 1, rank, "bias_channels"));
    }
    // a_scale per row (per output channel for a convolution's w), b_scale per column.
    const int a_scale = conv ? along(value(node.input(1), label), 0, 1, "x_scale")
                             : along(value(node.input(1), label), 0, 2, "a_scale_rows");
    const int b_scale = conv ? along(value(node.input(4), label), 1, rank, "w_scale_channels")
                             : along(value(node.input(4), label), 0, 1, "b_scale_columns");
    const int y_scale = value(node.input(6), label);
    const DType ftype = g.tensor(y_scale).dtype;
    const int multiplier =
        g.binary(ir::OpType::kDiv, name + ".multiplier", mul(name + ".scales", a_scale, b_scale), y_scale);
    const int scaled = mul(name + ".scaled", g.cast(name + ".accumulated", out, ftype), multiplier);
    const int y_zp = value(node.input(7), label);
    define(node, quantize(name, scaled, y_zp, g.tensor(y_zp).dtype));
  }
}

}  // namespace tpusim::onnx_detail
