#include "reference/cpu/mxu_gemm.hpp"

#include "sim/common/error.hpp"

namespace tpusim::reference {

namespace {

using ir::OpType;

numerics::MatmulNumerics numericsFor(DType dtype, const MxuNumericsOptions& options) {
  numerics::MatmulNumerics n;
  n.lhs_dtype = n.rhs_dtype = dtype;
  n.precision = options.precision;
  n.dataflow = options.dataflow;
  n.rows = options.rows;
  return n;
}

// out[m, n] = a[m, k] x b[k, n] through the MXU's numerics: f32 sums, or for int8 x int8
// exact int32 sums (a double holds every int32).
std::vector<double> gemm(const numerics::MatmulNumerics& n, const std::vector<float>& a, const std::vector<float>& b,
                         uint64_t m, uint64_t k, uint64_t cols) {
  if (n.lhs_dtype == DType::kInt8) {
    std::vector<int32_t> sums(m * cols);
    numerics::mxuMatmul(n, a, b, sums, m, k, cols);
    return {sums.begin(), sums.end()};
  }
  std::vector<float> out(m * cols);
  numerics::mxuMatmul(n, a, b, out, m, k, cols);
  return {out.begin(), out.end()};
}

void matmul(const ir::Op& op, const ir::TensorValue& a, const ir::TensorValue& b, ir::TensorValue& out,
            const numerics::MatmulNumerics& n) {
  const size_t rank = out.shape.size();
  const auto m = static_cast<uint64_t>(out.shape[rank - 2]), cols = static_cast<uint64_t>(out.shape[rank - 1]);
  const auto k = static_cast<uint64_t>(op.transpose_a ? a.shape[a.shape.size() - 2] : a.shape.back());
  const auto items = [](const ir::Shape& s) {
    return static_cast<uint64_t>(ir::elementCount(ir::Shape(s.begin(), s.end() - 2)));
  };
  const uint64_t batch = items(out.shape), a_items = items(a.shape), b_items = items(b.shape);
  if ((a_items != batch && a_items != 1) || (b_items != batch && b_items != 1)) {
    throw Error(ErrorKind::kUnsupported, "op '" + op.name +
                                             "': the MXU numerics take batched matmuls whose operands have the "
                                             "output's batch dimensions or none");
  }
  std::vector<float> lhs(m * k), rhs(k * cols);
  for (uint64_t item = 0; item < batch; ++item) {
    const double* pa = a.floats.data() + (a_items == 1 ? 0 : item) * m * k;
    const double* pb = b.floats.data() + (b_items == 1 ? 0 : item) * k * cols;
    for (uint64_t i = 0; i < m; ++i) {
      for (uint64_t j = 0; j < k; ++j)
        lhs[i * k + j] = static_cast<float>(op.transpose_a ? pa[j * m + i] : pa[i * k + j]);
    }
    for (uint64_t i = 0; i < k; ++i) {
      for (uint64_t j = 0; j < cols; ++j) {
        rhs[i * cols + j] = static_cast<float>(op.transpose_b ? pb[j * k + i] : pb[i * cols + j]);
      }
    }
    const std::vector<double> y = gemm(n, lhs, rhs, m, k, cols);
    for (uint64_t i = 0; i < m * cols; ++i) out.floats[item * m * cols + i] = y[i];
  }
}

// The implicit GEMM's geometry for one group: the patch matrix of x is
// [N*OH*OW, C/g*KH*KW], its column (c, kh, kw) in that order (w's layout).
struct Patches {
  const ir::Shape& x;  // [N, C, H, W]
  const ir::Shape& w;  // [M, C/g, KH, KW]
  const ir::Shape& y;  // [N, M, OH, OW]
  const ir::ConvGeometry& g;
  uint64_t rows() const { return static_cast<uint64_t>(y[0] * y[2] * y[3]); }
  uint64_t cols() const { return static_cast<uint64_t>(w[1] * w[2] * w[3]); }
  uint64_t outPerGroup() const { return static_cast<uint64_t>(w[0] / g.group); }
  // The x index behind patch (row, col) of group `group`, or -1 for padding.
  int64_t xIndex(uint64_t row, uint64_t col, int64_t group) const {
    const int64_t ow = static_cast<int64_t>(row) % y[3], oh = static_cast<int64_t>(row) / y[3] % y[2];
    const int64_t image = static_cast<int64_t>(row) / (y[2] * y[3]);
    const int64_t j = static_cast<int64_t>(col) % w[3], i = static_cast<int64_t>(col) / w[3] % w[2];
    const int64_t c = static_cast<int64_t>(col) / (w[2] * w[3]) + group * w[1];
    const int64_t h = oh * g.strides[0] - g.pads[0] + i * g.dilations[0];
    const int64_t v = ow * g.strides[1] - g.pads[1] + j * g.dilations[1];
    if (h < 0 || h >= x[2] || v < 0 || v >= x[3]) return -1;
    return ((image * x[1] + c) * x[2] + h) * x[3] + v;
  }
  // The y index of GEMM row `row`, output channel `channel` of group `group`.
  int64_t yIndex(uint64_t row, uint64_t channel, int64_t group) const {
    const int64_t pixels = y[2] * y[3];
    const int64_t image = static_cast<int64_t>(row) / pixels, pixel = static_cast<int64_t>(row) % pixels;
    return (image * y[1] + group * static_cast<int64_t>(outPerGroup()) + static_cast<int64_t>(channel)) * pixels +
           pixel;
  }
  // The w index of output channel `channel` of group `group`, patch column `col`.
  int64_t wIndex(uint64_t channel, uint64_t col, int64_t group) const {
    return (group * static_cast<int64_t>(outPerGroup()) + static_cast<int64_t>(channel)) *
               static_cast<int64_t>(cols()) +
           static_cast<int64_t>(col);
  }
};

std::vector<float> im2col(const Patches& p, const std::vector<double>& x, int64_t group) {
  std::vector<float> cols(p.rows() * p.cols());
  for (uint64_t r = 0; r < p.rows(); ++r) {
    for (uint64_t c = 0; c < p.cols(); ++c) {
      const int64_t at = p.xIndex(r, c, group);
      cols[r * p.cols() + c] = at < 0 ? 0.0f : static_cast<float>(x[static_cast<size_t>(at)]);
    }
  }
  return cols;
}

void conv(const ir::Op& op, const std::vector<const ir::TensorValue*>& in, ir::TensorValue& out,
          const numerics::MatmulNumerics& n) {
  const int64_t groups = op.conv.group;
  if (op.type == OpType::kConv) {
    const Patches p{in[0]->shape, in[1]->shape, out.shape, op.conv};
    for (int64_t group = 0; group < groups; ++group) {
      std::vector<float> wt(p.cols() * p.outPerGroup());  // w_g^T [C/g*KH*KW, M/g]
      for (uint64_t ch = 0; ch < p.outPerGroup(); ++ch) {
        for (uint64_t c = 0; c < p.cols(); ++c) {
          wt[c * p.outPerGroup() + ch] = static_cast<float>(in[1]->floats[static_cast<size_t>(p.wIndex(ch, c, group))]);
        }
      }
      const std::vector<double> y = gemm(n, im2col(p, in[0]->floats, group), wt, p.rows(), p.cols(), p.outPerGroup());
      for (uint64_t r = 0; r < p.rows(); ++r) {
        for (uint64_t ch = 0; ch < p.outPerGroup(); ++ch) {
          out.floats[static_cast<size_t>(p.yIndex(r, ch, group))] = y[r * p.outPerGroup() + ch];
        }
      }
    }
    return;
  }
  // Gradients: in[0] is dy for the input gradient, x for the weight gradient.
  const bool input_grad = op.type == OpType::kConvGradInput;
  const ir::Shape& x_shape = input_grad ? out.shape : in[0]->shape;
  const ir::Shape& w_shape = input_grad ? in[1]->shape : out.shape;
  const ir::TensorValue& dy_value = input_grad ? *in[0] : *in[1];
  const Patches p{x_shape, w_shape, dy_value.shape, op.conv};
  for (int64_t group = 0; group < groups; ++group) {
    std::vector<float> dy(p.rows() * p.outPerGroup());  // [N*OH*OW, M/g]
    for (uint64_t r = 0; r < p.rows(); ++r) {
      for (uint64_t ch = 0; ch < p.outPerGroup(); ++ch) {
        dy[r * p.outPerGroup() + ch] = static_cast<float>(dy_value.floats[static_cast<size_t>(p.yIndex(r, ch, group))]);
      }
    }
    if (input_grad) {
      std::vector<float> w(p.outPerGroup() * p.cols());  // w_g [M/g, C/g*KH*KW]
      for (uint64_t ch = 0; ch < p.outPerGroup(); ++ch) {
        for (uint64_t c = 0; c < p.cols(); ++c) {
          w[ch * p.cols() + c] = static_cast<float>(in[1]->floats[static_cast<size_t>(p.wIndex(ch, c, group))]);
        }
      }
      const std::vector<double> cols = gemm(n, dy, w, p.rows(), p.outPerGroup(), p.cols());
      for (uint64_t r = 0; r < p.rows(); ++r) {  // col2im, in float
        for (uint64_t c = 0; c < p.cols(); ++c) {
          const int64_t at = p.xIndex(r, c, group);
          if (at < 0) continue;
          double& dx = out.floats[static_cast<size_t>(at)];
          dx = static_cast<float>(static_cast<float>(dx) + static_cast<float>(cols[r * p.cols() + c]));
        }
      }
      continue;
    }
    std::vector<float> dyt(p.outPerGroup() * p.rows());  // dy^T [M/g, N*OH*OW]
    for (uint64_t r = 0; r < p.rows(); ++r) {
      for (uint64_t ch = 0; ch < p.outPerGroup(); ++ch) dyt[ch * p.rows() + r] = dy[r * p.outPerGroup() + ch];
    }
    const std::vector<double> dw = gemm(n, dyt, im2col(p, in[0]->floats, group), p.outPerGroup(), p.rows(), p.cols());
    for (uint64_t ch = 0; ch < p.outPerGroup(); ++ch) {
      for (uint64_t c = 0; c < p.cols(); ++c) {
        out.floats[static_cast<size_t>(p.wIndex(ch, c, group))] = dw[ch * p.cols() + c];
      }
    }
  }
}

}  // namespace

bool runsOnMxu(const ir::Op& op, DType dtype) {
  const bool mxu_op = op.type == OpType::kMatMul || op.type == OpType::kConv || op.type == OpType::kConvGradInput ||
                      op.type == OpType::kConvGradWeight;
  return mxu_op && (dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16);
}

bool isInt8Product(const ir::Op& op, DType dtype) {
  return (op.type == OpType::kMatMul || op.type == OpType::kConv) && dtype == DType::kInt8;
}

void mxuCompute(const ir::Op& op, const std::vector<const ir::TensorValue*>& inputs, ir::TensorValue& out,
                const MxuNumericsOptions& options) {
  const numerics::MatmulNumerics n = numericsFor(inputs[0]->dtype, options);
  if (isInt8Product(op, inputs[0]->dtype)) {
    // The int8 operands as floats (exact), the int32 sums through a float-valued result.
    std::vector<ir::TensorValue> floats;
    for (const ir::TensorValue* input : inputs) {
      floats.push_back({input->shape, DType::kF32, {input->ints.begin(), input->ints.end()}, {}});
    }
    ir::TensorValue sums = ir::TensorValue::zeros(out.shape, DType::kF32);
    if (op.type == OpType::kMatMul) {
      matmul(op, floats[0], floats[1], sums, n);
    } else {
      conv(op, {&floats[0], &floats[1]}, sums, n);
    }
    for (size_t i = 0; i < sums.floats.size(); ++i) out.ints[i] = static_cast<int64_t>(sums.floats[i]);
    return;
  }
  if (op.type == OpType::kMatMul) {
    matmul(op, *inputs[0], *inputs[1], out, n);
  } else {
    conv(op, inputs, out, n);
  }
}

}  // namespace tpusim::reference
