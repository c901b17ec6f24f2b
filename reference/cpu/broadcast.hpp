// Numpy-style broadcasting for the CPU kernels: operands are walked in the
// output's row-major order, each with stride 0 along the dimensions it is
// broadcast over, so every element is visited in a fixed order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "frontend/ir/graph.hpp"

namespace tpusim::reference {

// Element strides of a tensor of `shape` read as if it had `target` shape
// (shapes aligned at the right; 0 where `shape` has 1 or no dimension).
std::vector<int64_t> broadcastStrides(const ir::Shape& shape, const ir::Shape& target);

// out[i] = f(a[..], b[..]) over out's shape.
template <typename T, typename F>
void broadcastBinary(std::span<const T> a, const ir::Shape& a_shape, std::span<const T> b, const ir::Shape& b_shape,
                     std::span<T> out, const ir::Shape& out_shape, F f) {
  const std::vector<int64_t> sa = broadcastStrides(a_shape, out_shape);
  const std::vector<int64_t> sb = broadcastStrides(b_shape, out_shape);
  const size_t rank = out_shape.size();
  std::vector<int64_t> index(rank, 0);
  int64_t ia = 0;
  int64_t ib = 0;
  for (size_t o = 0; o < out.size(); ++o) {
    out[o] = f(a[static_cast<size_t>(ia)], b[static_cast<size_t>(ib)]);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < out_shape[d]) {
        ia += sa[d];
        ib += sb[d];
        break;
      }
      ia -= sa[d] * (out_shape[d] - 1);
      ib -= sb[d] * (out_shape[d] - 1);
      index[d] = 0;
    }
  }
}

// out[i] = condition[..] ? x[..] : y[..] over out's shape.
template <typename T>
void broadcastSelect(std::span<const int64_t> condition, const ir::Shape& c_shape, std::span<const T> x,
                     const ir::Shape& x_shape, std::span<const T> y, const ir::Shape& y_shape, std::span<T> out,
                     const ir::Shape& out_shape) {
  const std::vector<int64_t> sc = broadcastStrides(c_shape, out_shape);
  const std::vector<int64_t> sx = broadcastStrides(x_shape, out_shape);
  const std::vector<int64_t> sy = broadcastStrides(y_shape, out_shape);
  const size_t rank = out_shape.size();
  std::vector<int64_t> index(rank, 0);
  int64_t ic = 0, ix = 0, iy = 0;
  for (size_t o = 0; o < out.size(); ++o) {
    out[o] = condition[static_cast<size_t>(ic)] != 0 ? x[static_cast<size_t>(ix)] : y[static_cast<size_t>(iy)];
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < out_shape[d]) {
        ic += sc[d];
        ix += sx[d];
        iy += sy[d];
        break;
      }
      ic -= sc[d] * (out_shape[d] - 1);
      ix -= sx[d] * (out_shape[d] - 1);
      iy -= sy[d] * (out_shape[d] - 1);
      index[d] = 0;
    }
  }
}

// out[i] = f(a[..], b[..]) over out's shape, with an output type of its own (a comparison's bool).
template <typename T, typename U, typename F>
void broadcastMap(std::span<const T> a, const ir::Shape& a_shape, std::span<const T> b, const ir::Shape& b_shape,
                  std::span<U> out, const ir::Shape& out_shape, F f) {
  const std::vector<int64_t> sa = broadcastStrides(a_shape, out_shape);
  const std::vector<int64_t> sb = broadcastStrides(b_shape, out_shape);
  const size_t rank = out_shape.size();
  std::vector<int64_t> index(rank, 0);
  int64_t ia = 0;
  int64_t ib = 0;
  for (size_t o = 0; o < out.size(); ++o) {
    out[o] = f(a[static_cast<size_t>(ia)], b[static_cast<size_t>(ib)]);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < out_shape[d]) {
        ia += sa[d];
        ib += sb[d];
        break;
      }
      ia -= sa[d] * (out_shape[d] - 1);
      ib -= sb[d] * (out_shape[d] - 1);
      index[d] = 0;
    }
  }
}

// out (of out_shape, x's shape with reduced dimensions as 1) = x folded with f over the
// reduced dimensions, starting from `init`, in x's row-major order.
template <typename T, typename F>
void reduceInto(std::span<const T> x, const ir::Shape& x_shape, std::span<T> out, const ir::Shape& out_shape, T init,
                F f) {
  std::fill(out.begin(), out.end(), init);
  const std::vector<int64_t> so = broadcastStrides(out_shape, x_shape);
  const size_t rank = x_shape.size();
  std::vector<int64_t> index(rank, 0);
  int64_t io = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    out[static_cast<size_t>(io)] = f(out[static_cast<size_t>(io)], x[i]);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < x_shape[d]) {
        io += so[d];
        break;
      }
      io -= so[d] * (x_shape[d] - 1);
      index[d] = 0;
    }
  }
}

// out (of out_shape) = x (of x_shape, a broadcast of out_shape) summed over the
// broadcast dimensions, adding x's elements in row-major order, in T (float or
// double; values are held as double, see kernels.hpp).
template <typename T>
void reduceSumTo(std::span<const double> x, const ir::Shape& x_shape, std::span<double> out,
                 const ir::Shape& out_shape);

}  // namespace tpusim::reference
