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
  const std::vector<int64_t> so = broadcastStrides(out_shape, x_shape);
  const size_t rank = x_shape.size();
  std::vector<int64_t> index(rank, 0);
  int64_t io = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double& to = out[static_cast<size_t>(io)];
    to = static_cast<T>(static_cast<T>(to) + static_cast<T>(x[i]));
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

template void reduceSumTo<float>(std::span<const double>, const ir::Shape&, std::span<double>, const ir::Shape&);
template void reduceSumTo<double>(std::span<const double>, const ir::Shape&, std::span<double>, const ir::Shape&);

}  // namespace tpusim::reference
