// Max and average pooling over any number of spatial dimensions on the CPU,
// and the gradient of each. Max ignores padding and, on ties, takes the first
// maximum in window order; the gradient goes to that element. Average
// divides by the window's elements inside the input (or inside the padded
// input, with count_include_pad).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "frontend/ir/graph.hpp"

namespace tpusim::reference {

// V is how values are held (double for floating tensors, int64 for integer ones) and T
// the type averages add in (float for int64 and f32/bf16/f16 tensors, double for f64).
template <typename V, typename T>
void poolForward(std::span<const V> x, const ir::Shape& x_shape, std::span<V> y, const ir::Shape& y_shape,
                 const ir::PoolGeometry& geometry);
// ONNX MaxPool's Indices: each maximum's flattened index into x (row-major).
void poolArgmax(std::span<const double> x, const ir::Shape& x_shape, std::span<int64_t> indices,
                const ir::Shape& y_shape, const ir::PoolGeometry& geometry);
template <typename T>
void poolGrad(std::span<const double> dy, const ir::Shape& y_shape, std::span<const double> x, const ir::Shape& x_shape,
              std::span<double> dx, const ir::PoolGeometry& geometry);

}  // namespace tpusim::reference
