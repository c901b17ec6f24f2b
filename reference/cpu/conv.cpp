#include "reference/cpu/conv.hpp"

#include <algorithm>
#include <thread>

#include "reference/cpu/kernels.hpp"

namespace tpusim::reference {

namespace {

// The sizes of a convolution, read once from its shapes and geometry.
struct Dims {
  int64_t n, channels, height, width;            // x [N, C, H, W]
  int64_t out_channels, group_channels, kh, kw;  // w [M, C / group, KH, KW]
  int64_t out_h, out_w;                          // y [N, M, OH, OW]
  int64_t per_group;                             // output channels of a group
  int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;

  Dims(const ConvShapes& s, const ir::ConvGeometry& g)
      : n(s.x[0]),
        channels(s.x[1]),
        height(s.x[2]),
        width(s.x[3]),
        out_channels(s.w[0]),
        group_channels(s.w[1]),
        kh(s.w[2]),
        kw(s.w[3]),
        out_h(s.y[2]),
        out_w(s.y[3]),
        per_group(s.w[0] / g.group),
        stride_h(g.strides[0]),
        stride_w(g.strides[1]),
        pad_h(g.pads[0]),
        pad_w(g.pads[1]),
        dilation_h(g.dilations[0]),
        dilation_w(g.dilations[1]) {}

  // The input row (column) a kernel tap reads for an output row (column); outside
  // [0, height) ([0, width)) it falls in the padding.
  int64_t inputRow(int64_t oh, int64_t i) const { return oh * stride_h - pad_h + i * dilation_h; }
  int64_t inputColumn(int64_t ow, int64_t j) const { return ow * stride_w - pad_w + j * dilation_w; }
  // Calls tap(i, j, h, v) for each kernel tap (i, j) of output (oh, ow) that reads input
  // (h, v) inside the input, in (i, j) order.
  template <typename Tap>
  void forEachTapInside(int64_t oh, int64_t ow, Tap tap) const {
    for (int64_t i = 0; i < kh; ++i) {
      const int64_t h = inputRow(oh, i);
      if (h < 0 || h >= height) continue;
      for (int64_t j = 0; j < kw; ++j) {
        const int64_t v = inputColumn(ow, j);
        if (v >= 0 && v < width) tap(i, j, h, v);
      }
    }
  }
  size_t xIndex(int64_t image, int64_t channel, int64_t h, int64_t v) const {
    return static_cast<size_t>(((image * channels + channel) * height + h) * width + v);
  }
  size_t yIndex(int64_t image, int64_t m, int64_t oh, int64_t ow) const {
    return static_cast<size_t>(((image * out_channels + m) * out_h + oh) * out_w + ow);
  }
  size_t taps() const { return static_cast<size_t>(kh * kw); }
};

// The output channels [begin, end) of one group that a part [m0, m1) holds.
struct GroupSpan {
  int64_t begin, end, first_channel;  // first_channel: the group's first input channel
};

template <typename Body>
void forEachGroupIn(const Dims& d, int64_t m0, int64_t m1, Body body) {
  for (int64_t m = m0; m < m1;) {
    const int64_t group = m / d.per_group;
    const int64_t end = std::min(m1, (group + 1) * d.per_group);
    body(GroupSpan{m, end, group * d.group_channels});
    m = end;
  }
}

// to[i] = to[i] + a * b[i]: one term of `count` sums, each rounded in T (vectorized).
template <typename T>
void addScaled(T* to, T a, const T* b, int64_t count) {
  for (int64_t i = 0; i < count; ++i) to[i] = to[i] + a * b[i];
}

// src [outer, rows, cols] as [outer, cols, rows], in T: the transposed copies the passes
// read their channel runs from.
template <typename T>
std::vector<T> swappedLastTwo(std::span<const double> src, size_t outer, size_t rows, size_t cols) {
  std::vector<T> out(src.size());
  for (size_t o = 0; o < outer; ++o) {
    for (size_t r = 0; r < rows; ++r) {
      for (size_t c = 0; c < cols; ++c) out[(o * cols + c) * rows + r] = static_cast<T>(src[(o * rows + r) * cols + c]);
    }
  }
  return out;
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
  const int64_t row_chunk = (rows + row_parts - 1) / row_parts,
                column_chunk = (columns + column_parts - 1) / column_parts;
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
// owns whole output elements, and runs its innermost loop over a run of channels held
// contiguous in a transposed copy (in T), so the compiler vectorizes it. The loops outside
// visit one element's terms in the contract's order, whatever the channel run.
template <typename T>
void convForward(std::span<const double> x, std::span<const double> w, std::span<double> y, const ConvShapes& shapes,
                 const ir::ConvGeometry& geometry, int threads) {
  const Dims d(shapes, geometry);
  // w as [C / group, KH, KW, M]: the output channels of a tap contiguous.
  const std::vector<T> wt =
      swappedLastTwo<T>(w, 1, static_cast<size_t>(d.out_channels), static_cast<size_t>(d.group_channels) * d.taps());
  // y[n, m, ...] adds over (c, kh, kw): split over images and output channels.
  inParts(d.n, d.out_channels, threads, [&](int64_t n0, int64_t n1, int64_t m0, int64_t m1) {
    std::vector<T> sums(static_cast<size_t>(m1 - m0));
    for (int64_t image = n0; image < n1; ++image) {
      forEachGroupIn(d, m0, m1, [&](const GroupSpan& span) {
        const int64_t count = span.end - span.begin;
        for (int64_t oh = 0; oh < d.out_h; ++oh) {
          for (int64_t ow = 0; ow < d.out_w; ++ow) {
            std::fill_n(sums.begin(), count, T{0});
            for (int64_t c = 0; c < d.group_channels; ++c) {
              d.forEachTapInside(oh, ow, [&](int64_t i, int64_t j, int64_t h, int64_t v) {
                const size_t tap = static_cast<size_t>((c * d.kh + i) * d.kw + j);
                addScaled(sums.data(), static_cast<T>(x[d.xIndex(image, span.first_channel + c, h, v)]),
                          wt.data() + tap * static_cast<size_t>(d.out_channels) + static_cast<size_t>(span.begin),
                          count);
              });
            }
            for (int64_t k = 0; k < count; ++k)
              y[d.yIndex(image, span.begin + k, oh, ow)] = sums[static_cast<size_t>(k)];
          }
        }
      });
    }
  });
}

template <typename T>
void convGradInput(std::span<const double> dy, std::span<const double> w, std::span<double> dx,
                   const ConvShapes& shapes, const ir::ConvGeometry& geometry, int threads) {
  const Dims d(shapes, geometry);
  // w as [M, KH, KW, C / group]: the input channels of a tap contiguous.
  const auto cg = static_cast<size_t>(d.group_channels);
  const std::vector<T> wt = swappedLastTwo<T>(w, static_cast<size_t>(d.out_channels), cg, d.taps());
  const auto plane = static_cast<size_t>(d.height * d.width);
  // dx[n, c, ...] adds over (m, oh, ow): split over images and the input channels of each
  // group. For one dx element, (oh, ow) and m fix the tap, so visiting m, then oh, then
  // ow keeps its terms in order.
  inParts(d.n, d.group_channels, threads, [&](int64_t n0, int64_t n1, int64_t c0, int64_t c1) {
    const auto count = static_cast<size_t>(c1 - c0);
    std::vector<T> sums(plane * count);  // [H, W, c1 - c0]
    for (int64_t image = n0; image < n1; ++image) {
      forEachGroupIn(d, 0, d.out_channels, [&](const GroupSpan& span) {
        std::fill(sums.begin(), sums.end(), T{0});
        for (int64_t m = span.begin; m < span.end; ++m) {
          for (int64_t oh = 0; oh < d.out_h; ++oh) {
            for (int64_t ow = 0; ow < d.out_w; ++ow) {
              const auto g = static_cast<T>(dy[d.yIndex(image, m, oh, ow)]);
              d.forEachTapInside(oh, ow, [&](int64_t i, int64_t j, int64_t h, int64_t v) {
                const size_t tap = static_cast<size_t>(m) * d.taps() + static_cast<size_t>(i * d.kw + j);
                addScaled(sums.data() + static_cast<size_t>(h * d.width + v) * count, g,
                          wt.data() + tap * cg + static_cast<size_t>(c0), static_cast<int64_t>(count));
              });
            }
          }
        }
        for (size_t p = 0; p < plane; ++p) {
          for (size_t k = 0; k < count; ++k) {
            dx[d.xIndex(image, span.first_channel + c0 + static_cast<int64_t>(k), 0, 0) + p] = sums[p * count + k];
          }
        }
      });
    }
  });
}

template <typename T>
void convGradWeight(std::span<const double> x, std::span<const double> dy, std::span<double> dw,
                    const ConvShapes& shapes, const ir::ConvGeometry& geometry, int threads) {
  const Dims d(shapes, geometry);
  // dy as [N, OH, OW, M]: the output channels of a position contiguous.
  const auto m_count = static_cast<size_t>(d.out_channels);
  const auto positions = static_cast<size_t>(d.out_h * d.out_w);
  const std::vector<T> dyt = swappedLastTwo<T>(dy, static_cast<size_t>(d.n), m_count, positions);
  // dw[m, c, ...] adds over (n, oh, ow): split over output and input channels. Each tap's
  // sums see n, then oh, then ow in order: the taps of a position add to different sums.
  inParts(d.out_channels, d.group_channels, threads, [&](int64_t m0, int64_t m1, int64_t c0, int64_t c1) {
    std::vector<T> sums(d.taps() * static_cast<size_t>(m1 - m0));  // [KH, KW, m1 - m0]
    forEachGroupIn(d, m0, m1, [&](const GroupSpan& span) {
      const int64_t count = span.end - span.begin;
      for (int64_t c = c0; c < c1; ++c) {
        std::fill(sums.begin(), sums.end(), T{0});
        for (int64_t image = 0; image < d.n; ++image) {
          for (int64_t oh = 0; oh < d.out_h; ++oh) {
            for (int64_t ow = 0; ow < d.out_w; ++ow) {
              const T* g = dyt.data() +
                           (static_cast<size_t>(image) * positions + static_cast<size_t>(oh * d.out_w + ow)) * m_count +
                           static_cast<size_t>(span.begin);
              d.forEachTapInside(oh, ow, [&](int64_t i, int64_t j, int64_t h, int64_t v) {
                addScaled(sums.data() + static_cast<size_t>((i * d.kw + j) * count),
                          static_cast<T>(x[d.xIndex(image, span.first_channel + c, h, v)]), g, count);
              });
            }
          }
        }
        for (int64_t k = 0; k < count; ++k) {
          for (size_t t = 0; t < d.taps(); ++t) {
            dw[(static_cast<size_t>(span.begin + k) * static_cast<size_t>(d.group_channels) + static_cast<size_t>(c)) *
                   d.taps() +
               t] = sums[t * static_cast<size_t>(count) + static_cast<size_t>(k)];
          }
        }
      }
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
