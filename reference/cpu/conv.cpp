#include "reference/cpu/conv.hpp"

#include <algorithm>
#include <thread>

#include "reference/cpu/kernels.hpp"

namespace tpusim::reference {

namespace {

// Calls term(x_index, w_index, y_index) for every multiply-accumulate of the
// convolution, for batch images [n_begin, n_end).
template <typename Term>
void forEachTerm(const ConvShapes& s, const ir::ConvGeometry& g, int64_t n_begin, int64_t n_end, Term term) {
  const int64_t channels = s.x[1], height = s.x[2], width = s.x[3];
  const int64_t out_channels = s.w[0], group_channels = s.w[1], kh = s.w[2], kw = s.w[3];
  const int64_t out_h = s.y[2], out_w = s.y[3];
  const int64_t per_group = out_channels / g.group;
  for (int64_t n = n_begin; n < n_end; ++n) {
    for (int64_t m = 0; m < out_channels; ++m) {
      const int64_t first_channel = (m / per_group) * group_channels;
      for (int64_t oh = 0; oh < out_h; ++oh) {
        for (int64_t ow = 0; ow < out_w; ++ow) {
          const int64_t y_index = ((n * out_channels + m) * out_h + oh) * out_w + ow;
          for (int64_t c = 0; c < group_channels; ++c) {
            for (int64_t i = 0; i < kh; ++i) {
              const int64_t h = oh * g.strides[0] - g.pads[0] + i * g.dilations[0];
              if (h < 0 || h >= height) continue;
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t v = ow * g.strides[1] - g.pads[1] + j * g.dilations[1];
                if (v < 0 || v >= width) continue;
                const int64_t x_index = ((n * channels + first_channel + c) * height + h) * width + v;
                const int64_t w_index = ((m * group_channels + c) * kh + i) * kw + j;
                term(static_cast<size_t>(x_index), static_cast<size_t>(w_index), static_cast<size_t>(y_index));
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace

template <typename T>
void convForward(std::span<const double> x, std::span<const double> w, std::span<double> y, const ConvShapes& shapes,
                 const ir::ConvGeometry& geometry, int threads) {
  std::fill(y.begin(), y.end(), 0.0);
  const int64_t batch = shapes.x[0];
  const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(threads, batch));
  const auto body = [&](int64_t begin, int64_t end) {
    forEachTerm(shapes, geometry, begin, end, [&](size_t xi, size_t wi, size_t yi) {
      accumulate(y[yi], static_cast<T>(x[xi]) * static_cast<T>(w[wi]));
    });
  };
  if (workers == 1) {
    body(0, batch);
    return;
  }
  // Images are independent: each thread owns whole images, so sums keep their order.
  std::vector<std::thread> pool;
  const int64_t chunk = (batch + workers - 1) / workers;
  for (int64_t begin = 0; begin < batch; begin += chunk) pool.emplace_back(body, begin, std::min(batch, begin + chunk));
  for (std::thread& thread : pool) thread.join();
}

template <typename T>
void convGradInput(std::span<const double> dy, std::span<const double> w, std::span<double> dx,
                   const ConvShapes& shapes, const ir::ConvGeometry& geometry) {
  std::fill(dx.begin(), dx.end(), 0.0);
  forEachTerm(shapes, geometry, 0, shapes.x[0], [&](size_t xi, size_t wi, size_t yi) {
    accumulate(dx[xi], static_cast<T>(dy[yi]) * static_cast<T>(w[wi]));
  });
}

template <typename T>
void convGradWeight(std::span<const double> x, std::span<const double> dy, std::span<double> dw,
                    const ConvShapes& shapes, const ir::ConvGeometry& geometry) {
  std::fill(dw.begin(), dw.end(), 0.0);
  forEachTerm(shapes, geometry, 0, shapes.x[0], [&](size_t xi, size_t wi, size_t yi) {
    accumulate(dw[wi], static_cast<T>(x[xi]) * static_cast<T>(dy[yi]));
  });
}

#define TPUSIM_CONV_FOR(T)                                                                                             \
  template void convForward<T>(std::span<const double>, std::span<const double>, std::span<double>, const ConvShapes&, \
                               const ir::ConvGeometry&, int);                                                          \
  template void convGradInput<T>(std::span<const double>, std::span<const double>, std::span<double>,                  \
                                 const ConvShapes&, const ir::ConvGeometry&);                                          \
  template void convGradWeight<T>(std::span<const double>, std::span<const double>, std::span<double>,                 \
                                  const ConvShapes&, const ir::ConvGeometry&);
TPUSIM_CONV_FOR(float)
TPUSIM_CONV_FOR(double)
#undef TPUSIM_CONV_FOR

}  // namespace tpusim::reference
