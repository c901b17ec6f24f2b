// The operands of the device's GEMMs and 2-D convolutions (Device::gemm, Device::conv): plain
// descriptions that cuBLAS and cuDNN calls are made from on the GPU, and that the project's int8
// kernels (int8_products.hpp) read on either device.
#pragma once

#include <cstdint>

#include "reference/cuda/kernels/element.hpp"

namespace tpusim::reference::cuda {

// Row-major c[batch][m x n] = op(a) x op(b), op a transpose where asked; an operand's
// batch stride 0 repeats one matrix over the batch. a, b and c share a floating dtype, or
// a and b are int8 and c is int32 (--precision int8: exact sums).
struct GemmArgs {
  bool transpose_a = false, transpose_b = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  Ref a, b, c;
  int64_t a_stride = 0, b_stride = 0;
  int plan = -1;  // an int8 GEMM's, from Device::planGemm, made before the timed runs; -1: the project's kernel
};

// The element strides of op(a)[row][t] and op(b)[t][col] in a GemmArgs' row-major operands, with
// the transposes applied: a[e][row][t] is at e * a_stride + row * a_row + t * a_inner.
struct GemmLayout {
  int64_t a_row, a_inner, b_inner, b_col;
  TPUSIM_HD explicit GemmLayout(const GemmArgs& g)
      : a_row(g.transpose_a ? 1 : g.k),
        a_inner(g.transpose_a ? g.m : 1),
        b_inner(g.transpose_b ? 1 : g.n),
        b_col(g.transpose_b ? g.k : 1) {}
};

enum class ConvPass : int32_t { kForward, kGradInput, kGradWeight };

// A 2-D convolution: x [N, C, H, W], w [M, C / group, KH, KW], y [N, M, OH, OW], one
// floating dtype (or an int8 x and w into an int32 y, forward only). kForward: y from x and w;
// kGradInput: x (dx) from y (dy) and w; kGradWeight: w (dw) from x and y (dy). pads: top, left,
// bottom, right.
struct ConvArgs {
  ConvPass pass = ConvPass::kForward;
  int64_t x_dims[4] = {}, w_dims[4] = {}, y_dims[4] = {};
  int64_t strides[2] = {1, 1}, pads[4] = {}, dilations[2] = {1, 1}, group = 1;
  Ref x, w, y;
  int plan = -1;  // from Device::planConv, made before the timed runs
};

// Whether a GEMM or convolution multiplies int8 operands into int32 sums.
TPUSIM_HD inline bool multipliesInt8(const Ref& operand) {
  return operand.elem == Elem::kI8;
}

}  // namespace tpusim::reference::cuda
