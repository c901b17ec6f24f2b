#include "reference/cpu/conv.hpp"

#include <algorithm>
#include <thread>

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

void convForward(std::span<const float> x, std::span<const float> w, std::span<float> y, const ConvShapes& shapes,
                 const ir::ConvGeometry& geometry, int threads) {
  std::fill(y.begin(), y.end(), 0.0f);
  const int64_t batch = shapes.x[0];
  const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(threads, batch));
  const auto body = [&](int64_t begin, int64_t end) {
    forEachTerm(shapes, geometry, begin, end, [&](size_t xi, size_t wi, size_t yi) { y[yi] += x[xi] * w[wi]; });
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

void convGradInput(std::span<const float> dy, std::span<const float> w, std::span<float> dx, const ConvShapes& shapes,
                   const ir::ConvGeometry& geometry) {
  std::fill(dx.begin(), dx.end(), 0.0f);
  forEachTerm(shapes, geometry, 0, shapes.x[0], [&](size_t xi, size_t wi, size_t yi) { dx[xi] += dy[yi] * w[wi]; });
}

void convGradWeight(std::span<const float> x, std::span<const float> dy, std::span<float> dw, const ConvShapes& shapes,
                    const ir::ConvGeometry& geometry) {
  std::fill(dw.begin(), dw.end(), 0.0f);
  forEachTerm(shapes, geometry, 0, shapes.x[0], [&](size_t xi, size_t wi, size_t yi) { dw[wi] += x[xi] * dy[yi]; });
}

}  // namespace tpusim::reference
