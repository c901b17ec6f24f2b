// int8 x int8 GEMMs and convolutions summed exactly into int32 (--precision int8), as the CPU
// executor and the MXU sum them (sim/common/matmul_numerics.hpp): in uint32, so that a sum past
// int32's range wraps as it does there. The sums are exact, so any order gives the CPU's bits.
// One thread per output element. Also the kernels that move int8 operands into the one-byte
// layout cuBLAS's int8 GEMM reads, and its int32 sums back (the executor holds integers as int64).
#pragma once

#include "reference/cuda/kernels/product_args.hpp"

namespace tpusim::reference::cuda {

TPUSIM_HD inline uint32_t int8Product(int64_t a, int64_t b) {
  return static_cast<uint32_t>(static_cast<int32_t>(a) * static_cast<int32_t>(b));
}

// c[e][row][col] of an int8 GemmArgs.
struct Int8GemmKernel {
  GemmArgs args;
  TPUSIM_HD void operator()(int64_t i) const {
    const GemmArgs& g = args;
    const int64_t e = i / (g.m * g.n), row = i / g.n % g.m, col = i % g.n;
    const GemmLayout l(g);
    const int64_t a_base = e * g.a_stride + row * l.a_row, b_base = e * g.b_stride + col * l.b_col;
    uint32_t sum = 0;
    for (int64_t t = 0; t < g.k; ++t)
      sum += int8Product(loadInt(g.a, a_base + t * l.a_inner), loadInt(g.b, b_base + t * l.b_inner));
    storeInt(g.c, i, static_cast<int32_t>(sum));
  }
};

// y[n][m][oh][ow] of an int8 forward ConvArgs; pads may differ between a dimension's two sides.
struct Int8ConvKernel {
  ConvArgs args;
  TPUSIM_HD void operator()(int64_t i) const {
    const ConvArgs& c = args;
    const int64_t ow = i % c.y_dims[3], oh = i / c.y_dims[3] % c.y_dims[2];
    const int64_t m = i / (c.y_dims[2] * c.y_dims[3]) % c.y_dims[1], n = i / (c.y_dims[1] * c.y_dims[2] * c.y_dims[3]);
    const int64_t channels = c.w_dims[1], first = m / (c.w_dims[0] / c.group) * channels;
    const int64_t height = c.x_dims[2], width = c.x_dims[3];
    uint32_t sum = 0;
    for (int64_t ch = 0; ch < channels; ++ch) {
      for (int64_t kh = 0; kh < c.w_dims[2]; ++kh) {
        const int64_t ih = oh * c.strides[0] - c.pads[0] + kh * c.dilations[0];
        if (ih < 0 || ih >= height) continue;
        for (int64_t kw = 0; kw < c.w_dims[3]; ++kw) {
          const int64_t iw = ow * c.strides[1] - c.pads[1] + kw * c.dilations[1];
          if (iw < 0 || iw >= width) continue;
          const int64_t x = ((n * c.x_dims[1] + first + ch) * height + ih) * width + iw;
          const int64_t w = ((m * channels + ch) * c.w_dims[2] + kh) * c.w_dims[3] + kw;
          sum += int8Product(loadInt(c.x, x), loadInt(c.w, w));
        }
      }
    }
    storeInt(c.y, i, static_cast<int32_t>(sum));
  }
};

// out[i] = in[i] as one byte: an int8 tensor's elements (held as int64, already in range).
struct PackInt8Kernel {
  Ref in;
  int8_t* out = nullptr;
  TPUSIM_HD void operator()(int64_t i) const { out[i] = static_cast<int8_t>(loadInt(in, i)); }
};

// out[i] = in[i]: int32 sums into the int32 tensor that holds them as int64.
struct WidenInt32Kernel {
  const int32_t* in = nullptr;
  Ref out;
  TPUSIM_HD void operator()(int64_t i) const { storeInt(out, i, in[i]); }
};

}  // namespace tpusim::reference::cuda
