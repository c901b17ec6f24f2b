// A tensor's contents on the host: shape, dtype and values. Floating types
// hold float values already rounded to their dtype (see numerics.hpp);
// integer types hold int64 values.
#pragma once

#include <cstdint>
#include <vector>

#include "frontend/ir/graph.hpp"

namespace tpusim::ir {

struct TensorValue {
  Shape shape;
  DType dtype = DType::kF32;
  std::vector<float> floats;  // floating dtypes
  std::vector<int64_t> ints;  // integer and bool dtypes

  static bool isFloating(DType dtype) { return dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16; }
  size_t size() const { return isFloating(dtype) ? floats.size() : ints.size(); }
  static TensorValue zeros(const Shape& shape, DType dtype) {
    TensorValue value{shape, dtype, {}, {}};
    const auto count = static_cast<size_t>(elementCount(shape));
    if (isFloating(dtype)) {
      value.floats.assign(count, 0.0f);
    } else {
      value.ints.assign(count, 0);
    }
    return value;
  }
};

}  // namespace tpusim::ir
