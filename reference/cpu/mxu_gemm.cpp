#include "reference/cpu/mxu_gemm.hpp"

#include "sim/common/error.hpp"

namespace tpusim::reference {

namespace {

using ir::OpType;

// How an op's GEMMs run: the MXU's numerics, on `threads` threads (which
// split the rows of each GEMM's output and do not change its bits).
struct GemmSetup {
  numerics::MatmulNumerics numerics;
  int threads = 1;
};

GemmSetup setupFor(DType dtype, const MxuNumericsOptions& options, int threads) {
  GemmSetup setup;
  numerics::MatmulNumerics& n = setup.numerics;
  n.lhs_dtype = n.rhs_dtype = dtype;
  n.precision = options.precision;
  n.dataflow = options.dataflow;
  n.rows = options.rows;
  setup.threads = threads;
  return setup;
}

// out[m, n] = a[m, k] x b[k, n] through the MXU's numerics: f32 sums of float operands
// (rounded to their dtype or split into bf16 passes by mxuMatmul).
std::vector<float> gemm(const GemmSetup& n, const std::vector<float>& a, const std::vector<float>& b, uint64_t m,
                        uint64_t k, uint64_t cols) {
  std::vector<float> out(m * cols);
  numerics::mxuMatmul(n.numerics, a, b, out, m, k, cols, n.threads);
  return out;
}

// The same for int8 operands: exact (wrapping) int32 sums.
std::vector<int32_t> gemm(const GemmSetup& n, const std::vector<int8_t>& a, const std::vector<int8_t>& b, uint64_t m,
                          uint64_t k, uint64_t cols) {
  std::vector<int32_t> out(m * cols);
  numerics::mxuMatmul(n.numerics, std::span<const int8_t>(a), std::span<const int8_t>(b), out, m, k, cols, n.threads);
  return out;
}

// `rows` x `cols` row-major of E from a row-major source, or from its transpose
// ([cols, rows]). A transposed source is read in its own order and written across:
// the written matrix is the smaller one (E is float or int8, the source double or int64).
template <typename E, typename Src>
void packMatrix(const Src* from, bool transposed, uint64_t rows, uint64_t cols, std::vector<E>& to) {
  if (!transposed) {
    for (uint64_t i = 0; i < rows * cols; ++i) to[i] = static_cast<E>(from[i]);
    return;
  }
  for (uint64_t j = 0; j < cols; ++j) {
    for (uint64_t i = 0; i < rows; ++i) to[i * cols + j] = static_cast<E>(from[j * rows + i]);
  }
}

// A (batched) MatMul with operands of E: float through the f32 numerics, int8 into int32.
// `a`, `b` and `out` are the values (floats or ints) of the tensors of those shapes.
template <typename E, typename Src, typename Dst>
void matmul(const ir::Op& op, const ir::Shape& a_shape, const std::vector<Src>& a, const ir::Shape& b_shape,
            const std::vector<Src>& b, const ir::Shape& out_shape, std::vector<Dst>& out, const GemmSetup& n) {
  const size_t rank = out_shape.size();
  const auto m = static_cast<uint64_t>(out_shape[rank - 2]), cols = static_cast<uint64_t>(out_shape[rank - 1]);
  const auto k = static_cast<uint64_t>(op.transpose_a ? a_shape[a_shape.size() - 2] : a_shape.back());
  const auto items = [](const ir::Shape& s) {
    return static_cast<uint64_t>(ir::elementCount(ir::Shape(s.begin(), s.end() - 2)));
  };
  const uint64_t batch = items(out_shape), a_items = items(a_shape), b_items = items(b_shape);
  if ((a_items != batch && a_items != 1) || (b_items != batch && b_items != 1)) {
    throw Error(ErrorKind::kUnsupported, "op '" + op.name +
                                             "': the MXU numerics take batched matmuls whose operands have the "
                                             "output's batch dimensions or none");
  }
  std::vector<E> lhs(m * k), rhs(k * cols);
  for (uint64_t item = 0; item < batch; ++item) {
    // An operand without batch dimensions is the same matrix for every item: packed once.
    if (item == 0 || a_items != 1) packMatrix(a.data() + (a_items == 1 ? 0 : item) * m * k, op.transpose_a, m, k, lhs);
    if (item == 0 || b_items != 1) {
      packMatrix(b.data() + (b_items == 1 ? 0 : item) * k * cols, op.transpose_b, k, cols, rhs);
    }
    const auto y = gemm(n, lhs, rhs, m, k, cols);
    for (uint64_t i = 0; i < m * cols; ++i) out[item * m * cols + i] = static_cast<Dst>(y[i]);
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
  // Calls at(index) for each patch element of group `group` in row-major order (rows (image,
  // oh, ow), columns (c, kh, kw)): the x index it reads, or -1 for padding.
  template <typename At>
  void forEachPatch(int64_t group, At at) const {
    for (int64_t image = 0; image < y[0]; ++image) {
      for (int64_t oh = 0; oh < y[2]; ++oh) {
        for (int64_t ow = 0; ow < y[3]; ++ow) {
          for (int64_t c = group * w[1]; c < (group + 1) * w[1]; ++c) {
            const int64_t plane = (image * x[1] + c) * x[2] * x[3];
            for (int64_t i = 0; i < w[2]; ++i) {
              const int64_t h = oh * g.strides[0] - g.pads[0] + i * g.dilations[0];
              for (int64_t j = 0; j < w[3]; ++j) {
                const int64_t v = ow * g.strides[1] - g.pads[1] + j * g.dilations[1];
                at(h >= 0 && h < x[2] && v >= 0 && v < x[3] ? plane + h * x[3] + v : -1);
              }
            }
          }
        }
      }
    }
  }
  // The y index of GEMM row `row`, output channel 0 of group `group`; channel ch is
  // pixels() further on per channel.
  int64_t yIndex(uint64_t row, int64_t group) const {
    const int64_t image = static_cast<int64_t>(row) / pixels(), pixel = static_cast<int64_t>(row) % pixels();
    return (image * y[1] + group * static_cast<int64_t>(outPerGroup())) * pixels() + pixel;
  }
  int64_t pixels() const { return y[2] * y[3]; }
  // The w index of output channel `channel` of group `group`, patch column `col`.
  int64_t wIndex(uint64_t channel, uint64_t col, int64_t group) const {
    return (group * static_cast<int64_t>(outPerGroup()) + static_cast<int64_t>(channel)) *
               static_cast<int64_t>(cols()) +
           static_cast<int64_t>(col);
  }
};

template <typename E, typename Src>
std::vector<E> im2col(const Patches& p, const std::vector<Src>& x, int64_t group) {
  std::vector<E> cols(p.rows() * p.cols());
  E* to = cols.data();
  p.forEachPatch(group, [&](int64_t at) { *to++ = at < 0 ? E{0} : static_cast<E>(x[static_cast<size_t>(at)]); });
  return cols;
}

// The forward convolution, y_g = im2col(x) x w_g^T per group, with operands of E:
// float through the f32 numerics, int8 into int32. `x`, `w` and `y` are the values
// (floats or ints) of the tensors `p` describes.
template <typename E, typename Src, typename Dst>
void convForward(const Patches& p, const std::vector<Src>& x, const std::vector<Src>& w, std::vector<Dst>& y,
                 const GemmSetup& n) {
  for (int64_t group = 0; group < p.g.group; ++group) {
    std::vector<E> wt(p.cols() * p.outPerGroup());  // w_g^T [C/g*KH*KW, M/g]
    for (uint64_t ch = 0; ch < p.outPerGroup(); ++ch) {
      for (uint64_t c = 0; c < p.cols(); ++c) {
        wt[c * p.outPerGroup() + ch] = static_cast<E>(w[static_cast<size_t>(p.wIndex(ch, c, group))]);
      }
    }
    const auto sums = gemm(n, im2col<E>(p, x, group), wt, p.rows(), p.cols(), p.outPerGroup());
    for (uint64_t r = 0; r < p.rows(); ++r) {
      Dst* row = y.data() + p.yIndex(r, group);
      for (uint64_t ch = 0; ch < p.outPerGroup(); ++ch) {
        row[static_cast<int64_t>(ch) * p.pixels()] = static_cast<Dst>(sums[r * p.outPerGroup() + ch]);
      }
    }
  }
}

// The gradients of a convolution, in float: in[0] is dy for the input gradient, x for the
// weight gradient.
void convGradient(const ir::Op& op, const std::vector<const ir::TensorValue*>& in, ir::TensorValue& out,
                  const GemmSetup& n) {
  const int64_t groups = op.conv.group;
  const bool input_grad = op.type == OpType::kConvGradInput;
  const ir::Shape& x_shape = input_grad ? out.shape : in[0]->shape;
  const ir::Shape& w_shape = input_grad ? in[1]->shape : out.shape;
  const ir::TensorValue& dy_value = input_grad ? *in[0] : *in[1];
  const Patches p{x_shape, w_shape, dy_value.shape, op.conv};
  for (int64_t group = 0; group < groups; ++group) {
    std::vector<float> dy(p.rows() * p.outPerGroup());  // [N*OH*OW, M/g]
    for (uint64_t r = 0; r < p.rows(); ++r) {
      const double* row = dy_value.floats.data() + p.yIndex(r, group);
      for (uint64_t ch = 0; ch < p.outPerGroup(); ++ch) {
        dy[r * p.outPerGroup() + ch] = static_cast<float>(row[static_cast<int64_t>(ch) * p.pixels()]);
      }
    }
    if (input_grad) {
      std::vector<float> w(p.outPerGroup() * p.cols());  // w_g [M/g, C/g*KH*KW]
      for (uint64_t ch = 0; ch < p.outPerGroup(); ++ch) {
        for (uint64_t c = 0; c < p.cols(); ++c) {
          w[ch * p.cols() + c] = static_cast<float>(in[1]->floats[static_cast<size_t>(p.wIndex(ch, c, group))]);
        }
      }
      const std::vector<float> cols = gemm(n, dy, w, p.rows(), p.outPerGroup(), p.cols());
      const float* from = cols.data();
      p.forEachPatch(group, [&](int64_t at) {  // col2im, in float, in the patch matrix's order
        const float term = *from++;
        if (at < 0) return;
        double& dx = out.floats[static_cast<size_t>(at)];
        dx = static_cast<float>(static_cast<float>(dx) + term);
      });
      continue;
    }
    std::vector<float> dyt(p.outPerGroup() * p.rows());  // dy^T [M/g, N*OH*OW]
    for (uint64_t r = 0; r < p.rows(); ++r) {
      for (uint64_t ch = 0; ch < p.outPerGroup(); ++ch) dyt[ch * p.rows() + r] = dy[r * p.outPerGroup() + ch];
    }
    const std::vector<float> dw =
        gemm(n, dyt, im2col<float>(p, in[0]->floats, group), p.outPerGroup(), p.rows(), p.cols());
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
                const MxuNumericsOptions& options, int threads) {
  const GemmSetup n = setupFor(inputs[0]->dtype, options, threads);
  const ir::TensorValue& a = *inputs[0];
  const ir::TensorValue& b = *inputs[1];
  if (isInt8Product(op, a.dtype)) {  // int8 operands packed as bytes, int32 sums into out.ints
    if (op.type == OpType::kMatMul) {
      matmul<int8_t>(op, a.shape, a.ints, b.shape, b.ints, out.shape, out.ints, n);
    } else {
      convForward<int8_t>(Patches{a.shape, b.shape, out.shape, op.conv}, a.ints, b.ints, out.ints, n);
    }
    return;
  }
  if (op.type == OpType::kMatMul) {
    matmul<float>(op, a.shape, a.floats, b.shape, b.floats, out.shape, out.floats, n);
  } else if (op.type == OpType::kConv) {
    convForward<float>(Patches{a.shape, b.shape, out.shape, op.conv}, a.floats, b.floats, out.floats, n);
  } else {
    convGradient(op, inputs, out, n);
  }
}

}  // namespace tpusim::reference
