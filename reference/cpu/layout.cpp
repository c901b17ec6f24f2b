#include "reference/cpu/layout.hpp"

namespace tpusim::reference {

// The index into x of each element of a strided slice of x, in the slice's row-major order.
std::vector<size_t> slicedOffsets(const ir::Shape& x_shape, const std::vector<int64_t>& starts,
                                  const std::vector<int64_t>& steps, const ir::Shape& out_shape) {
  const size_t rank = x_shape.size();
  const auto count = static_cast<size_t>(ir::elementCount(out_shape));
  std::vector<size_t> offsets(count);
  if (count == 0) return offsets;
  std::vector<int64_t> x_strides(rank, 1);
  for (size_t d = rank; d-- > 1;) x_strides[d - 1] = x_strides[d] * x_shape[d];
  int64_t at = 0;
  for (size_t d = 0; d < rank; ++d) at += starts[d] * x_strides[d];
  std::vector<int64_t> index(rank, 0);
  for (size_t o = 0; o < count; ++o) {
    offsets[o] = static_cast<size_t>(at);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < out_shape[d]) {
        at += steps[d] * x_strides[d];
        break;
      }
      at -= steps[d] * x_strides[d] * (out_shape[d] - 1);
      index[d] = 0;
    }
  }
  return offsets;
}

}  // namespace tpusim::reference
