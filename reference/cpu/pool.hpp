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

template <typename T>
void poolForward(std::span<const T> x, const ir::Shape& x_shape, std::span<T> y, const ir::Shape& y_shape,
                 const ir::PoolGeometry& geometry);
// ONNX MaxPool's Indices: each maximum's flattened index into x (row-major).
void poolArgmax(std::span<const float> x, const ir::Shape& x_shape, std::span<int64_t> indices,
                const ir::Shape& y_shape, const ir::PoolGeometry& geometry);
void poolGrad(std::span<const float> dy, const ir::Shape& y_shape, std::span<const float> x, const ir::Shape& x_shape,
              std::span<float> dx, const ir::PoolGeometry& geometry);

}  // namespace tpusim::reference
