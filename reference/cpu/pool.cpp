#include "reference/cpu/pool.hpp"

#include <algorithm>
#include <limits>
#include <type_traits>

#include "reference/cpu/kernels.hpp"

namespace tpusim::reference {

namespace {

// Steps `index` through `shape` in row-major order; false once it wraps to zero.
bool advance(std::vector<int64_t>& index, const std::vector<int64_t>& shape) {
  for (size_t d = index.size(); d-- > 0;) {
    if (++index[d] < shape[d]) return true;
    index[d] = 0;
  }
  return false;
}

// For every output element: visit(y_index, x_indices_in_window, divisor), the divisor
// being the count of elements an average divides by.
template <typename Visit>
void forEachWindow(const ir::Shape& x_shape, const ir::Shape& y_shape, const ir::PoolGeometry& g, Visit visit) {
  const size_t rank = x_shape.size() - 2;
  const ir::Shape spatial(x_shape.begin() + 2, x_shape.end());
  const ir::Shape out_spatial(y_shape.begin() + 2, y_shape.end());
  const int64_t planes = x_shape[0] * x_shape[1];
  const int64_t plane_size = ir::elementCount(spatial);
  const int64_t out_plane_size = ir::elementCount(out_spatial);
  std::vector<size_t> window;
  for (int64_t p = 0; p < planes; ++p) {
    std::vector<int64_t> out(rank, 0);
    int64_t out_linear = 0;
    do {
      window.clear();
      int64_t padded_count = 0;
      std::vector<int64_t> k(rank, 0);
      do {
        bool inside = true;
        bool inside_padded = true;
        int64_t linear = 0;
        for (size_t d = 0; d < rank; ++d) {
          const int64_t at = out[d] * g.strides[d] - g.pads[d] + k[d] * g.dilations[d];
          inside = inside && at >= 0 && at < spatial[d];
          inside_padded = inside_padded && at < spatial[d] + g.pads[d + rank];
          linear = linear * spatial[d] + at;
        }
        padded_count += inside_padded;
        if (inside) window.push_back(static_cast<size_t>(p * plane_size + linear));
      } while (advance(k, g.kernel));
      const int64_t count = g.count_include_pad ? padded_count : static_cast<int64_t>(window.size());
      visit(static_cast<size_t>(p * out_plane_size + out_linear), window, count);
      ++out_linear;
    } while (advance(out, out_spatial));
  }
}

template <typename T>
size_t argMax(std::span<const T> x, const std::vector<size_t>& window) {
  size_t best = window[0];
  for (size_t index : window) {
    if (x[index] > x[best]) best = index;
  }
  return best;
}

}  // namespace

template <typename V, typename T>
void poolForward(std::span<const V> x, const ir::Shape& x_shape, std::span<V> y, const ir::Shape& y_shape,
                 const ir::PoolGeometry& g) {
  // The empty window of a max pool: the lowest value of the tensor's own type.
  using Lowest = std::conditional_t<std::is_integral_v<V>, V, T>;
  forEachWindow(x_shape, y_shape, g, [&](size_t out, const std::vector<size_t>& window, int64_t divisor) {
    if (window.empty()) {
      y[out] = g.max ? static_cast<V>(std::numeric_limits<Lowest>::lowest()) : V{};
    } else if (g.max) {
      y[out] = x[argMax(x, window)];
    } else {
      T sum = 0;
      for (size_t index : window) sum += static_cast<T>(x[index]);
      y[out] = static_cast<V>(static_cast<T>(sum / static_cast<T>(divisor)));
    }
  });
}

template void poolForward<double, float>(std::span<const double>, const ir::Shape&, std::span<double>, const ir::Shape&,
                                         const ir::PoolGeometry&);
template void poolForward<double, double>(std::span<const double>, const ir::Shape&, std::span<double>,
                                          const ir::Shape&, const ir::PoolGeometry&);
template void poolForward<int64_t, float>(std::span<const int64_t>, const ir::Shape&, std::span<int64_t>,
                                          const ir::Shape&, const ir::PoolGeometry&);

void poolArgmax(std::span<const double> x, const ir::Shape& x_shape, std::span<int64_t> indices,
                const ir::Shape& y_shape, const ir::PoolGeometry& g) {
  const ir::Shape spatial(x_shape.begin() + 2, x_shape.end());
  const int64_t plane = ir::elementCount(spatial);
  forEachWindow(x_shape, y_shape, g, [&](size_t out, const std::vector<size_t>& window, int64_t) {
    if (window.empty()) {
      indices[out] = -1;
      return;
    }
    auto index = static_cast<int64_t>(argMax(x, window));
    if (g.column_major_indices) {
      // Re-count the position inside its plane with the first spatial dimension fastest.
      int64_t rest = index % plane;
      int64_t reversed = 0;
      for (size_t d = spatial.size(); d-- > 0;) {
        const int64_t coordinate = rest % spatial[d];
        rest /= spatial[d];
        int64_t weight = 1;
        for (size_t e = 0; e < d; ++e) weight *= spatial[e];
        reversed += coordinate * weight;
      }
      index = index - index % plane + reversed;
    }
    indices[out] = index;
  });
}

template <typename T>
void poolGrad(std::span<const double> dy, const ir::Shape& y_shape, std::span<const double> x, const ir::Shape& x_shape,
              std::span<double> dx, const ir::PoolGeometry& g) {
  std::fill(dx.begin(), dx.end(), 0.0);
  forEachWindow(x_shape, y_shape, g, [&](size_t out, const std::vector<size_t>& window, int64_t divisor) {
    if (window.empty()) return;
    const auto d = static_cast<T>(dy[out]);
    if (g.max) {
      accumulate(dx[argMax(x, window)], d);
      return;
    }
    for (size_t index : window) accumulate(dx[index], static_cast<T>(d / static_cast<T>(divisor)));
  });
}

template void poolGrad<float>(std::span<const double>, const ir::Shape&, std::span<const double>, const ir::Shape&,
                              std::span<double>, const ir::PoolGeometry&);
template void poolGrad<double>(std::span<const double>, const ir::Shape&, std::span<const double>, const ir::Shape&,
                               std::span<double>, const ir::PoolGeometry&);

}  // namespace tpusim::reference
