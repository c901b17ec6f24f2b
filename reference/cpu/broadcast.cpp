#include "reference/cpu/broadcast.hpp"

#include <algorithm>

namespace tpusim::reference {

std::vector<int64_t> broadcastStrides(const ir::Shape& shape, const ir::Shape& target) {
  std::vector<int64_t> strides(target.size(), 0);
  int64_t stride = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    const size_t dim = shape.size() - 1 - i;
    const size_t target_dim = target.size() - 1 - i;
    strides[target_dim] = shape[dim] == 1 ? 0 : stride;
    stride *= shape[dim];
  }
  return strides;
}

template <typename T>
void reduceSumTo(std::span<const double> x, const ir::Shape& x_shape, std::span<double> out,
                 const ir::Shape& out_shape) {
  std::fill(out.begin(), out.end(), 0.0);
  forEachRun<1>(
      x_shape, {broadcastStrides(out_shape, x_shape)},
      [&](const std::array<int64_t, 1>& at, const std::array<int64_t, 1>& step, int64_t length, int64_t first) {
        double* o = out.data() + at[0];
        const double* v = x.data() + first;
        if (step[0] == 0) {  // a sum along the run: one accumulator, in the run's order
          T sum = static_cast<T>(*o);
          for (int64_t i = 0; i < length; ++i) sum = static_cast<T>(sum + static_cast<T>(v[i]));
          *o = sum;
          return;
        }
        for (int64_t i = 0; i < length; ++i) {
          double& to = o[i * step[0]];
          to = static_cast<T>(static_cast<T>(to) + static_cast<T>(v[i]));
        }
      });
}

template void reduceSumTo<float>(std::span<const double>, const ir::Shape&, std::span<double>, const ir::Shape&);
template void reduceSumTo<double>(std::span<const double>, const ir::Shape&, std::span<double>, const ir::Shape&);

}  // namespace tpusim::reference
