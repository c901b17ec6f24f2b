#include "reference/cpu/conv.hpp"

#include <algorithm>
#include <thread>

#include "reference/cpu/kernels.hpp"

namespace tpusim::reference {

namespace {

// The part of the index space one thread walks: images [n_begin, n_end), output channels
// [m_begin, m_end) and input channels [c_begin, c_end) of each group.
struct Part {
  int64_t n_begin, n_end, m_begin, m_end, c_begin, c_end;
};

// Calls term(x_index, w_index, y_index) for every multiply-accumulate of the convolution in
// `part`, in (n, m, oh, ow, c, kh, kw) order. A part restricts the ranges but not the order,
// so every output element of a pass that owns it whole gets its terms in the same order.
template <typename Term>
void forEachTerm(const ConvShapes& s, const ir::ConvGeometry& g, const Part& part, Term term) {
  const int64_t channels = s.x[1], height = s.x[2], width = s.x[3];
  const int64_t out_channels = s.w[0], group_channels = s.w[1], kh = s.w[2], kw = s.w[3];
  const int64_t out_h = s.y[2], out_w = s.y[3];
  const int64_t per_group = out_channels / g.group;
  for (int64_t n = part.n_begin; n < part.n_end; ++n) {
    for (int64_t m = part.m_begin; m < part.m_end; ++m) {
      const int64_t first_channel = (m / per_group) * group_channels;
      for (int64_t oh = 0; oh < out_h; ++oh) {
        for (int64_t ow = 0; ow < out_w; ++ow) {
          const int64_t y_index = ((n * out_channels + m) * out_h + oh) * out_w + ow;
          for (int64_t c = part.c_begin; c < part.c_end; ++c) {
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

// Runs body(part) over `threads` parts of a grid of `rows` x `columns` units: the first
// dimension split first, then the second, as far as there are threads for.
template <typename Body>
void inParts(int64_t rows, int64_t columns, int threads, Body body) {
  const int64_t row_parts = std::max<int64_t>(1, std::min<int64_t>(threads, rows));
  const int64_t column_parts = std::max<int64_t>(1, std::min<int64_t>(threads / row_parts, columns));
  if (row_parts * column_parts == 1) {
    body(int64_t{0}, rows, int64_t{0}, columns);
    return;
  }
  const int64_t row_chunk = (rows + row_parts - 1) / row_parts, column_chunk = (columns + column_parts - 1) / column_parts;
  std::vector<std::thread> pool;
  for (int64_t r = 0; r < rows; r += row_chunk) {
    for (int64_t c = 0; c < columns; c += column_chunk) {
      pool.emplace_back(body, r, std::min(rows, r + row_chunk), c, std::min(columns, c + column_chunk));
    }
  }
  for (std::thread& thread : pool) thread.join();
}

}  // namespace

// Each pass splits over the dimensions its output element does not add over, so a thread
// owns whole output elements and their sums keep the one-thread order.
template <typename T>
void convForward(std::span<const double> x, std::span<const double> w, std::span<double> y, const ConvShapes& shapes,
                 const ir::ConvGeometry& geometry, int threads) {
  std::fill(y.begin(), y.end(), 0.0);
  // y[n, m, ...] adds over c: split over images and output channels.
  inParts(shapes.x[0], shapes.w[0], threads, [&](int64_t n0, int64_t n1, int64_t m0, int64_t m1) {
    forEachTerm(shapes, geometry, {n0, n1, m0, m1, 0, shapes.w[1]}, [&](size_t xi, size_t wi, size_t yi) {
      accumulate(y[yi], static_cast<T>(x[xi]) * static_cast<T>(w[wi]));
    });
  });
}

template <typename T>
void convGradInput(std::span<const double> dy, std::span<const double> w, std::span<double> dx,
                   const ConvShapes& shapes, const ir::ConvGeometry& geometry, int threads) {
  std::fill(dx.begin(), dx.end(), 0.0);
  // dx[n, c, ...] adds over m: split over images and the input channels of each group.
  inParts(shapes.x[0], shapes.w[1], threads, [&](int64_t n0, int64_t n1, int64_t c0, int64_t c1) {
    forEachTerm(shapes, geometry, {n0, n1, 0, shapes.w[0], c0, c1}, [&](size_t xi, size_t wi, size_t yi) {
      accumulate(dx[xi], static_cast<T>(dy[yi]) * static_cast<T>(w[wi]));
    });
  });
}

template <typename T>
void convGradWeight(std::span<const double> x, std::span<const double> dy, std::span<double> dw,
                    const ConvShapes& shapes, const ir::ConvGeometry& geometry, int threads) {
  std::fill(dw.begin(), dw.end(), 0.0);
  // dw[m, c, ...] adds over n: split over output channels and input channels.
  inParts(shapes.w[0], shapes.w[1], threads, [&](int64_t m0, int64_t m1, int64_t c0, int64_t c1) {
    forEachTerm(shapes, geometry, {0, shapes.x[0], m0, m1, c0, c1}, [&](size_t xi, size_t wi, size_t yi) {
      accumulate(dw[wi], static_cast<T>(x[xi]) * static_cast<T>(dy[yi]));
    });
  });
}

#define TPUSIM_CONV_FOR(T)                                                                                             \
  template void convForward<T>(std::span<const double>, std::span<const double>, std::span<double>, const ConvShapes&, \
                               const ir::ConvGeometry&, int);                                                          \
  template void convGradInput<T>(std::span<const double>, std::span<const double>, std::span<double>,                  \
                                 const ConvShapes&, const ir::ConvGeometry&, int);                                     \
  template void convGradWeight<T>(std::span<const double>, std::span<const double>, std::span<double>,                 \
                                  const ConvShapes&, const ir::ConvGeometry&, int);
TPUSIM_CONV_FOR(float)
TPUSIM_CONV_FOR(double)
#undef TPUSIM_CONV_FOR

}  // namespace tpusim::reference
