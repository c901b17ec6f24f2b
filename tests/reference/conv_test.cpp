// The CPU reference convolution passes (reference/cpu/conv.hpp) against literal loops
// written straight from the contract: each output element sums its terms from zero in T,
// forward over (c, kh, kw), the input gradient over (m, oh, ow), the weight gradient over
// (n, oh, ow), skipping the terms that fall in the padding. The passes reorder their loops
// for speed; these tests pin that every element's bits stay the contract's.
#include "reference/cpu/conv.hpp"

#include <cstring>
#include <random>

#include <gtest/gtest.h>

namespace tpusim::reference {
namespace {

struct Case {
  const char* name;
  ir::Shape x, w;
  std::vector<int64_t> strides, pads, dilations;
  int64_t group;
};

// Output size of one spatial dimension (floor), as the graph computes it.
int64_t outSize(int64_t in, int64_t k, int64_t stride, int64_t pad_begin, int64_t pad_end, int64_t dilation) {
  return (in + pad_begin + pad_end - dilation * (k - 1) - 1) / stride + 1;
}

ConvShapes shapesOf(const Case& c) {
  const int64_t oh = outSize(c.x[2], c.w[2], c.strides[0], c.pads[0], c.pads[2], c.dilations[0]);
  const int64_t ow = outSize(c.x[3], c.w[3], c.strides[1], c.pads[1], c.pads[3], c.dilations[1]);
  return {c.x, c.w, {c.x[0], c.w[0], oh, ow}};
}

ir::ConvGeometry geometryOf(const Case& c) {
  ir::ConvGeometry g;
  g.strides = c.strides;
  g.pads = c.pads;
  g.dilations = c.dilations;
  g.group = c.group;
  return g;
}

// Visits every term of the convolution as (x index, w index, y index).
template <typename Term>
void eachTerm(const ConvShapes& s, const ir::ConvGeometry& g, Term term) {
  const int64_t per_group = s.w[0] / g.group;
  for (int64_t n = 0; n < s.x[0]; ++n)
    for (int64_t m = 0; m < s.w[0]; ++m)
      for (int64_t oh = 0; oh < s.y[2]; ++oh)
        for (int64_t ow = 0; ow < s.y[3]; ++ow)
          for (int64_t c = 0; c < s.w[1]; ++c)
            for (int64_t i = 0; i < s.w[2]; ++i)
              for (int64_t j = 0; j < s.w[3]; ++j) {
                const int64_t h = oh * g.strides[0] - g.pads[0] + i * g.dilations[0];
                const int64_t v = ow * g.strides[1] - g.pads[1] + j * g.dilations[1];
                if (h < 0 || h >= s.x[2] || v < 0 || v >= s.x[3]) continue;
                const int64_t channel = (m / per_group) * s.w[1] + c;
                term(((n * s.x[1] + channel) * s.x[2] + h) * s.x[3] + v, ((m * s.w[1] + c) * s.w[2] + i) * s.w[3] + j,
                     ((n * s.w[0] + m) * s.y[2] + oh) * s.y[3] + ow);
              }
}

// One output element's terms in the contract's order, summed from zero in T. `key` orders
// them: (c, kh, kw) is the w index within an output channel, (m, oh, ow) the y index
// within an image, (n, oh, ow) the y index within an output channel; eachTerm already
// visits each element's terms in that order, so a running sum per element is the contract.
template <typename T>
std::vector<double> literal(const ConvShapes& s, const ir::ConvGeometry& g, const std::vector<double>& a,
                            const std::vector<double>& b, size_t out_size, int pass) {
  std::vector<T> sums(out_size, T{0});
  eachTerm(s, g, [&](int64_t xi, int64_t wi, int64_t yi) {
    const auto x = static_cast<size_t>(xi), w = static_cast<size_t>(wi), y = static_cast<size_t>(yi);
    if (pass == 0) sums[y] = sums[y] + static_cast<T>(a[x]) * static_cast<T>(b[w]);
    if (pass == 1) sums[x] = sums[x] + static_cast<T>(a[y]) * static_cast<T>(b[w]);
    if (pass == 2) sums[w] = sums[w] + static_cast<T>(a[x]) * static_cast<T>(b[y]);
  });
  return {sums.begin(), sums.end()};
}

std::vector<double> randomValues(const ir::Shape& shape, std::mt19937& rng) {
  // Wide exponents, so that a change of order changes rounded sums.
  std::uniform_real_distribution<float> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-12, 12);
  std::vector<double> values(static_cast<size_t>(ir::elementCount(shape)));
  for (double& v : values) v = std::ldexp(mantissa(rng), exponent(rng));
  return values;
}

bool sameBits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

const Case kCases[] = {
    {"3x3 SAME", {2, 5, 7, 6}, {4, 5, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},
    {"strided, dilated, uneven pads, grouped", {3, 6, 9, 8}, {8, 3, 3, 2}, {2, 1}, {1, 0, 2, 2}, {1, 2}, 2},
    {"depthwise, stride 2", {2, 4, 8, 7}, {4, 1, 3, 3}, {2, 2}, {0, 1, 1, 0}, {1, 1}, 4},
    {"7x7 stride 2 over 3 channels", {1, 3, 13, 11}, {6, 3, 7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}, 1},
    {"1x1 stride 2, more channels than lanes", {2, 37, 5, 5}, {19, 37, 1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1},
    {"kernel past the input", {1, 2, 3, 3}, {3, 2, 4, 5}, {1, 3}, {2, 2, 2, 3}, {2, 1}, 1},
};

template <typename T>
void checkPasses(const char* dtype) {
  std::mt19937 rng(11);
  for (const Case& c : kCases) {
    const ConvShapes s = shapesOf(c);
    const ir::ConvGeometry g = geometryOf(c);
    const std::vector<double> x = randomValues(s.x, rng), w = randomValues(s.w, rng), dy = randomValues(s.y, rng);
    const std::vector<double> want_y = literal<T>(s, g, x, w, dy.size(), 0);
    const std::vector<double> want_dx = literal<T>(s, g, dy, w, x.size(), 1);
    const std::vector<double> want_dw = literal<T>(s, g, x, dy, w.size(), 2);
    for (int threads : {1, 2, 3, 5}) {
      std::vector<double> y(dy.size(), 7.0), dx(x.size(), 7.0), dw(w.size(), 7.0);  // every element written
      convForward<T>(x, w, y, s, g, threads);
      convGradInput<T>(dy, w, dx, s, g, threads);
      convGradWeight<T>(x, dy, dw, s, g, threads);
      EXPECT_TRUE(sameBits(y, want_y)) << dtype << " forward, " << c.name << ", " << threads << " threads";
      EXPECT_TRUE(sameBits(dx, want_dx)) << dtype << " input gradient, " << c.name << ", " << threads << " threads";
      EXPECT_TRUE(sameBits(dw, want_dw)) << dtype << " weight gradient, " << c.name << ", " << threads << " threads";
    }
  }
}

TEST(CpuConv, FloatPassesSumEachElementInTheContractsOrder) {
  checkPasses<float>("f32");
}
TEST(CpuConv, DoublePassesSumEachElementInTheContractsOrder) {
  checkPasses<double>("f64");
}

TEST(CpuConv, A3x3ConvolutionOfOnesCountsTheTermsInsideTheInput) {
  // Closed form: with x = w = 1, y[oh, ow] is the number of kernel taps inside the input:
  // 9 inside, 6 on an edge, 4 in a corner of a 4 x 5 input under 3x3 SAME.
  const ConvShapes s{{1, 1, 4, 5}, {1, 1, 3, 3}, {1, 1, 4, 5}};
  ir::ConvGeometry g;
  g.pads = {1, 1, 1, 1};
  std::vector<double> y(20);
  convForward<float>(std::vector<double>(20, 1.0), std::vector<double>(9, 1.0), y, s, g, 1);
  const std::vector<double> want{4, 6, 6, 6, 4, 6, 9, 9, 9, 6, 6, 9, 9, 9, 6, 4, 6, 6, 6, 4};
  EXPECT_EQ(y, want);
}

}  // namespace
}  // namespace tpusim::reference
