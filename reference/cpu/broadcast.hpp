// Numpy-style broadcasting for the CPU kernels: operands are walked in the
// output's row-major order, each with stride 0 along the dimensions it is
// broadcast over, so every element is visited in a fixed order.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "frontend/ir/graph.hpp"

namespace tpusim::reference {

// Element strides of a tensor of `shape` read as if it had `target` shape
// (shapes aligned at the right; 0 where `shape` has 1 or no dimension).
std::vector<int64_t> broadcastStrides(const ir::Shape& shape, const ir::Shape& target);

// The walk every broadcast below shares: `shape`'s elements in row-major order, as runs along
// its innermost dimension, once the dimensions of size 1 are dropped and neighbours that every
// operand reads as one (strides[k] of the outer = strides[k] x size of the inner) are merged,
// so that the inner loops are long and plain. For each run, calls
// run(at, step, length, first): operand k's elements are at[k] + i step[k] for i < length, and
// the run's first element is element `first` of `shape`.
template <size_t N, typename F>
void forEachRun(const ir::Shape& shape, const std::array<std::vector<int64_t>, N>& strides, F run) {
  struct Dim {
    int64_t size;
    std::array<int64_t, N> strides;
  };
  std::vector<Dim> dims;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return;  // no elements
    if (shape[d] == 1) continue;
    Dim dim{shape[d], {}};
    for (size_t k = 0; k < N; ++k) dim.strides[k] = strides[k][d];
    bool merges = !dims.empty();
    for (size_t k = 0; k < N && merges; ++k) merges = dims.back().strides[k] == dim.strides[k] * dim.size;
    if (merges) {
      dims.back().size *= dim.size;
      dims.back().strides = dim.strides;
    } else {
      dims.push_back(dim);
    }
  }
  if (dims.empty()) dims.push_back(Dim{1, {}});  // one element
  const Dim inner = dims.back();
  dims.pop_back();
  std::vector<int64_t> index(dims.size(), 0);
  std::array<int64_t, N> at{};
  for (int64_t first = 0;; first += inner.size) {
    run(std::as_const(at), inner.strides, inner.size, first);
    size_t d = dims.size();
    for (; d-- > 0;) {
      if (++index[d] < dims[d].size) {
        for (size_t k = 0; k < N; ++k) at[k] += dims[d].strides[k];
        break;
      }
      for (size_t k = 0; k < N; ++k) at[k] -= dims[d].strides[k] * (dims[d].size - 1);
      index[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;  // every outer index wrapped: the walk is done
  }
}

// out[i] = f(a[..], b[..]) over out's shape, with an output type of its own (a comparison's bool).
template <typename T, typename U, typename F>
void broadcastMap(std::span<const T> a, const ir::Shape& a_shape, std::span<const T> b, const ir::Shape& b_shape,
                  std::span<U> out, const ir::Shape& out_shape, F f) {
  forEachRun<2>(
      out_shape, {broadcastStrides(a_shape, out_shape), broadcastStrides(b_shape, out_shape)},
      [&](const std::array<int64_t, 2>& at, const std::array<int64_t, 2>& step, int64_t length, int64_t first) {
        const T* x = a.data() + at[0];
        const T* y = b.data() + at[1];
        U* o = out.data() + first;
        if (step[0] == 1 && step[1] == 1) {
          for (int64_t i = 0; i < length; ++i) o[i] = f(x[i], y[i]);
        } else if (step[0] == 1 && step[1] == 0) {
          for (int64_t i = 0; i < length; ++i) o[i] = f(x[i], *y);
        } else if (step[0] == 0 && step[1] == 1) {
          for (int64_t i = 0; i < length; ++i) o[i] = f(*x, y[i]);
        } else {
          for (int64_t i = 0; i < length; ++i) o[i] = f(x[i * step[0]], y[i * step[1]]);
        }
      });
}

// out[i] = f(a[..], b[..]) over out's shape.
template <typename T, typename F>
void broadcastBinary(std::span<const T> a, const ir::Shape& a_shape, std::span<const T> b, const ir::Shape& b_shape,
                     std::span<T> out, const ir::Shape& out_shape, F f) {
  broadcastMap<T, T>(a, a_shape, b, b_shape, out, out_shape, f);
}

// out[i] = condition[..] ? x[..] : y[..] over out's shape.
template <typename T>
void broadcastSelect(std::span<const int64_t> condition, const ir::Shape& c_shape, std::span<const T> x,
                     const ir::Shape& x_shape, std::span<const T> y, const ir::Shape& y_shape, std::span<T> out,
                     const ir::Shape& out_shape) {
  forEachRun<3>(
      out_shape,
      {broadcastStrides(c_shape, out_shape), broadcastStrides(x_shape, out_shape),
       broadcastStrides(y_shape, out_shape)},
      [&](const std::array<int64_t, 3>& at, const std::array<int64_t, 3>& step, int64_t length, int64_t first) {
        for (int64_t i = 0; i < length; ++i) {
          out[static_cast<size_t>(first + i)] = condition[static_cast<size_t>(at[0] + i * step[0])] != 0
                                                    ? x[static_cast<size_t>(at[1] + i * step[1])]
                                                    : y[static_cast<size_t>(at[2] + i * step[2])];
        }
      });
}

// out (of out_shape, x's shape with reduced dimensions as 1) = x folded with f over the
// reduced dimensions, starting from `init`, in x's row-major order.
template <typename T, typename F>
void reduceInto(std::span<const T> x, const ir::Shape& x_shape, std::span<T> out, const ir::Shape& out_shape, T init,
                F f) {
  std::fill(out.begin(), out.end(), init);
  forEachRun<1>(
      x_shape, {broadcastStrides(out_shape, x_shape)},
      [&](const std::array<int64_t, 1>& at, const std::array<int64_t, 1>& step, int64_t length, int64_t first) {
        T* o = out.data() + at[0];
        const T* v = x.data() + first;
        for (int64_t i = 0; i < length; ++i) o[i * step[0]] = f(o[i * step[0]], v[i]);
      });
}

// out (of out_shape) = x (of x_shape, a broadcast of out_shape) summed over the
// broadcast dimensions, adding x's elements in row-major order, in T (float or
// double; values are held as double, see kernels.hpp).
template <typename T>
void reduceSumTo(std::span<const double> x, const ir::Shape& x_shape, std::span<double> out,
                 const ir::Shape& out_shape);

}  // namespace tpusim::reference
