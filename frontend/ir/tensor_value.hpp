// A tensor's contents on the host: shape, dtype and values. Floating types
// hold double values already rounded to their dtype (see numerics.hpp: an f32
// value is a float, exactly; f64 is not rounded); integer types hold int64 values.
#pragma once

#include <cstdint>
#include <vector>

#include "frontend/ir/graph.hpp"

namespace tpusim::ir {

struct TensorValue {
  Shape shape;
  DType dtype = DType::kF32;
  std::vector<double> floats;  // floating dtypes
  std::vector<int64_t> ints;   // integer and bool dtypes

  static bool isFloating(DType dtype) { return isFloatingDType(dtype); }
  size_t size() const { return isFloating(dtype) ? floats.size() : ints.size(); }
  static TensorValue zeros(const Shape& shape, DType dtype) {
    TensorValue value{shape, dtype, {}, {}};
    const auto count = static_cast<size_t>(elementCount(shape));
    if (isFloating(dtype)) {
      value.floats.assign(count, 0.0);
    } else {
      value.ints.assign(count, 0);
    }
    return value;
  }
};

}  // namespace tpusim::ir
