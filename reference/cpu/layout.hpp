// Data movement for the CPU executor: transposes, copies along an axis, strided
// slices and gathers, on any element type (double for floating values, int64 for
// the others). Every one visits elements in a fixed order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "frontend/ir/graph.hpp"
#include "sim/common/error.hpp"

namespace tpusim::reference {

// out[j] = x[i] where out's index j is x's index i with dimensions permuted.
template <typename T>
void transposeValues(const std::vector<T>& x, const ir::Shape& x_shape, const std::vector<int64_t>& perm,
                     std::vector<T>& out) {
  const size_t rank = x_shape.size();
  std::vector<int64_t> x_strides(rank, 1);
  for (size_t d = rank; d-- > 1;) x_strides[d - 1] = x_strides[d] * x_shape[d];
  ir::Shape out_shape(rank);
  std::vector<int64_t> strides(rank);  // x stride of each output dimension
  for (size_t d = 0; d < rank; ++d) {
    out_shape[d] = x_shape[static_cast<size_t>(perm[d])];
    strides[d] = x_strides[static_cast<size_t>(perm[d])];
  }
  std::vector<int64_t> index(rank, 0);
  int64_t source = 0;
  for (size_t o = 0; o < out.size(); ++o) {
    out[o] = x[static_cast<size_t>(source)];
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < out_shape[d]) {
        source += strides[d];
        break;
      }
      source -= strides[d] * (out_shape[d] - 1);
      index[d] = 0;
    }
  }
}

// x viewed as [outer, axis_len, inner]: copies rows [start, start + len) of the axis to out at `offset`.
template <typename T>
void copyAlongAxis(const std::vector<T>& from, int64_t outer, int64_t from_len, int64_t from_start, int64_t inner,
                   std::vector<T>& to, int64_t to_len, int64_t to_start, int64_t len) {
  for (int64_t o = 0; o < outer; ++o) {
    const auto src = from.begin() + (o * from_len + from_start) * inner;
    std::copy(src, src + len * inner, to.begin() + (o * to_len + to_start) * inner);
  }
}

inline int64_t outerOf(const ir::Shape& shape, int64_t axis) {
  return ir::elementCount(ir::Shape(shape.begin(), shape.begin() + axis));
}
inline int64_t innerOf(const ir::Shape& shape, int64_t axis) {
  return ir::elementCount(ir::Shape(shape.begin() + axis + 1, shape.end()));
}

// Visits every (outer, index position, inner block) of a gather along `axis`;
// visit(data_offset, out_offset, inner) with element offsets. Checks each index.
template <typename Visit>
void forEachGathered(const ir::Shape& data_shape, std::span<const int64_t> indices, int64_t axis, Visit visit) {
  const int64_t outer = outerOf(data_shape, axis);
  const int64_t inner = innerOf(data_shape, axis);
  const int64_t length = data_shape[static_cast<size_t>(axis)];
  const auto count = static_cast<int64_t>(indices.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < count; ++i) {
      int64_t index = indices[static_cast<size_t>(i)];
      if (index < 0) index += length;
      if (index < 0 || index >= length) {
        throw Error(ErrorKind::kInvalidInput, "index " + std::to_string(indices[static_cast<size_t>(i)]) +
                                                  " is out of range for a dimension of " + std::to_string(length));
      }
      visit((o * length + index) * inner, (o * count + i) * inner, inner);
    }
  }
}

// The index into x of each element of a strided slice of x, in the slice's row-major order.
std::vector<size_t> slicedOffsets(const ir::Shape& x_shape, const std::vector<int64_t>& starts,
                                  const std::vector<int64_t>& steps, const ir::Shape& out_shape);

}  // namespace tpusim::reference
