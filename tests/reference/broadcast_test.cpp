// The CPU executor's broadcast walks (reference/cpu/broadcast.hpp) against literal loops that
// work out every element's operand offsets from its multi-index: shapes with dimensions of
// size 1 and 0, scalars, operands of lower rank, and the folds' order (a float sum is
// compared bit for bit, so a walk that added in another order would show).
#include "reference/cpu/broadcast.hpp"

#include <algorithm>
#include <random>

#include <gtest/gtest.h>

namespace tpusim::reference {
namespace {

using ir::Shape;

std::vector<double> randomFloats(const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<double> values(static_cast<size_t>(ir::elementCount(shape)));
  for (double& v : values) v = uniform(rng);
  return values;
}

// The row-major multi-index of element `flat` of `shape`.
std::vector<int64_t> indexOf(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

// The element of `shape` (right-aligned, size-1 dimensions broadcast) that `index` of a larger shape reads.
int64_t offsetIn(const Shape& shape, const std::vector<int64_t>& index) {
  int64_t offset = 0;
  const size_t skip = index.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) offset = offset * shape[d] + (shape[d] == 1 ? 0 : index[skip + d]);
  return offset;
}

struct Case {
  Shape out, a, b;
};

const std::vector<Case> kCases = {
    {{2, 3, 4, 5}, {2, 3, 4, 5}, {2, 3, 4, 5}},  // equal shapes: one run
    {{2, 3, 4, 5}, {2, 3, 4, 5}, {1, 3, 1, 1}},  // a per-channel operand
    {{2, 3, 4, 5}, {3, 1, 1}, {2, 3, 4, 5}},     // ... on the left, of lower rank
    {{2, 3, 4, 5}, {2, 1, 4, 1}, {1, 3, 1, 5}},  // both broadcast, alternately
    {{4, 1, 5}, {4, 1, 5}, {5}},                 // a size-1 dimension between two
    {{6, 7}, {}, {6, 7}},                        // a scalar
    {{}, {}, {}},                                // scalars
    {{3, 0, 2}, {3, 0, 2}, {2}},                 // no elements
    {{1, 1, 9}, {1, 1, 1}, {9}},
};

TEST(Broadcast, BinaryReadsTheElementsEachOutputIndexNames) {
  std::mt19937 rng(5);
  for (const Case& c : kCases) {
    const std::vector<double> a = randomFloats(c.a, rng), b = randomFloats(c.b, rng);
    std::vector<double> out(static_cast<size_t>(ir::elementCount(c.out)), -7.0);
    broadcastBinary<double>(a, c.a, b, c.b, out, c.out, [](double x, double y) { return x / 4 - y; });
    for (size_t o = 0; o < out.size(); ++o) {
      const std::vector<int64_t> index = indexOf(static_cast<int64_t>(o), c.out);
      const double x = a[static_cast<size_t>(offsetIn(c.a, index))], y = b[static_cast<size_t>(offsetIn(c.b, index))];
      EXPECT_EQ(out[o], x / 4 - y) << "element " << o << " of case with out rank " << c.out.size();
    }
  }
}

TEST(Broadcast, SelectReadsTheConditionAndBothBranchesPerElement) {
  std::mt19937 rng(6);
  const Shape out_shape{2, 3, 4}, c_shape{2, 1, 4}, x_shape{3, 1}, y_shape{4};
  std::vector<int64_t> condition(8);
  for (size_t i = 0; i < condition.size(); ++i) condition[i] = static_cast<int64_t>(rng() % 2);
  const std::vector<double> x = randomFloats(x_shape, rng), y = randomFloats(y_shape, rng);
  std::vector<double> out(24);
  broadcastSelect<double>(condition, c_shape, x, x_shape, y, y_shape, out, out_shape);
  for (size_t o = 0; o < out.size(); ++o) {
    const std::vector<int64_t> index = indexOf(static_cast<int64_t>(o), out_shape);
    const bool pick = condition[static_cast<size_t>(offsetIn(c_shape, index))] != 0;
    EXPECT_EQ(out[o], pick ? x[static_cast<size_t>(offsetIn(x_shape, index))]
                           : y[static_cast<size_t>(offsetIn(y_shape, index))]);
  }
}

TEST(Broadcast, SumsAddInTheInputsRowMajorOrderInFloat) {
  std::mt19937 rng(7);
  // Reduced: the inner dimensions (a per-channel sum), the outer ones, alternate ones, all.
  const Shape x_shape{3, 4, 5, 6};
  const std::vector<Shape> kept = {{1, 4, 1, 1}, {5, 6}, {3, 1, 5, 1}, {1, 1, 1, 1}, {3, 4, 5, 6}};
  const std::vector<double> x = randomFloats(x_shape, rng);
  for (const Shape& out_shape : kept) {
    std::vector<double> sum(static_cast<size_t>(ir::elementCount(out_shape)));
    std::vector<double> max(sum.size());
    reduceSumTo<float>(x, x_shape, sum, out_shape);
    reduceInto<double>(x, x_shape, max, out_shape, -2.0, [](double a, double b) { return std::max(a, b); });
    std::vector<float> literal(sum.size(), 0.0f);
    std::vector<double> literal_max(sum.size(), -2.0);
    for (size_t i = 0; i < x.size(); ++i) {
      const auto o = static_cast<size_t>(offsetIn(out_shape, indexOf(static_cast<int64_t>(i), x_shape)));
      literal[o] += static_cast<float>(x[i]);
      literal_max[o] = std::max(literal_max[o], x[i]);
    }
    for (size_t o = 0; o < sum.size(); ++o) {
      EXPECT_EQ(sum[o], static_cast<double>(literal[o])) << o;
      EXPECT_EQ(max[o], literal_max[o]) << o;
    }
  }
}

}  // namespace
}  // namespace tpusim::reference
