// The PE-by-PE mode against the closed form (every cycle count and every
// breakdown), against a plain loop in the MXU's accumulation order (every
// bit), and its controller rules proven tight.
#include "sim/mxu/pe_array.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "sim/common/error.hpp"
#include "sim/common/matmul_numerics.hpp"

namespace tpusim {
namespace {

const Dataflow kDataflows[] = {Dataflow::kWeightStationary, Dataflow::kInputStationary, Dataflow::kOutputStationary};

struct Operands {
  std::vector<std::vector<float>> lhs, rhs;
  std::vector<PassOperands> passes;
};

Operands randomOperands(const MatmulShape& s, std::mt19937& rng) {
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-12, 12);
  Operands o;
  for (uint64_t p = 0; p < s.passes; ++p) {
    std::vector<float> lhs(s.m * s.k), rhs(s.k * s.n);
    for (float& v : lhs) v = std::ldexp(value(rng), exponent(rng));
    for (float& v : rhs) v = std::ldexp(value(rng), exponent(rng));
    o.lhs.push_back(std::move(lhs));
    o.rhs.push_back(std::move(rhs));
  }
  for (uint64_t p = 0; p < s.passes; ++p) o.passes.push_back({o.lhs[p], o.rhs[p]});
  return o;
}

// The accumulation order written as plainly as possible: WS and IS add the
// products of each block of R k's in increasing k, then add the block sums in
// order; OS adds all K products in order; passes add one after another.
std::vector<float> plainMatmul(const Operands& o, const MatmulShape& s, const ArrayConfig& a) {
  const uint64_t block = a.dataflow == Dataflow::kOutputStationary ? s.k : a.rows;
  std::vector<float> out(s.m * s.n);
  for (uint64_t m = 0; m < s.m; ++m) {
    for (uint64_t n = 0; n < s.n; ++n) {
      float acc = 0.0f;
      for (uint64_t p = 0; p < s.passes; ++p) {
        for (uint64_t k0 = 0; k0 < s.k; k0 += block) {
          float sum = 0.0f;
          for (uint64_t k = k0; k < std::min(s.k, k0 + block); ++k)
            sum = sum + o.lhs[p][m * s.k + k] * o.rhs[p][k * s.n + n];
          acc = acc + sum;
        }
      }
      out[m * s.n + n] = acc;
    }
  }
  return out;
}

TEST(PeArray, OneFoldByHand) {
  // 2 x 2 WS array, lhs [[1, 2]], rhs [[3, 4], [5, 6]]: out = [[13, 16]].
  // The tile loads in cycles 0-1, row 0 enters at 2; out[0, 1] leaves PE (1, 1)
  // at 2 + 0 + 1 + 1 = 4: 5 cycles = 2 + (1 + 2 + 2 - 2).
  const std::vector<float> lhs = {1, 2}, rhs = {3, 4, 5, 6};
  const PeArrayRun run = simulatePeArray({2, 2, Dataflow::kWeightStationary, true}, {1, 2, 2, 1}, {{lhs, rhs}});
  EXPECT_EQ(run.timing.cycles, 5u);
  EXPECT_EQ(run.out, (std::vector<float>{13, 16}));
  EXPECT_EQ(run.timing.macs, 4u);
}

// Hundreds of random cases: the PE-by-PE cycles and breakdown equal the closed
// form's, and the outputs equal the plain loop's bit for bit.
TEST(PeArray, AgreesWithTheClosedFormAndThePlainLoop) {
  std::mt19937 rng(20261202);
  std::uniform_int_distribution<uint64_t> edge(1, 20), dim(1, 45), passes(1, 3), coin(0, 1), feed(2, 4);
  std::uniform_int_distribution<int> flow(0, 2);
  for (int i = 0; i < 400; ++i) {
    const ArrayConfig a{edge(rng), edge(rng), kDataflows[flow(rng)], coin(rng) == 1};
    const uint64_t interval = coin(rng) == 1 ? 1 : std::min(a.rows, feed(rng));
    const MatmulShape s{dim(rng), dim(rng), dim(rng), coin(rng) == 1 ? 1 : passes(rng), interval};
    const Operands o = randomOperands(s, rng);
    SCOPED_TRACE(std::string(dataflowName(a.dataflow)) + (a.double_buffered ? " double " : " single ") +
                 std::to_string(a.rows) + "x" + std::to_string(a.cols) + " m=" + std::to_string(s.m) +
                 " k=" + std::to_string(s.k) + " n=" + std::to_string(s.n) + " passes=" + std::to_string(s.passes) +
                 " feed=" + std::to_string(s.feed_interval));
    PeArrayRun run;
    ASSERT_NO_THROW(run = simulatePeArray(a, s, o.passes));
    const ArrayTiming closed = arrayTiming(a, s);
    ASSERT_EQ(run.timing.cycles, closed.cycles);
    ASSERT_EQ(run.timing.folds, closed.folds);
    ASSERT_EQ(run.timing.macs, closed.macs);
    ASSERT_EQ(run.timing.stream_cycles, closed.stream_cycles);
    ASSERT_EQ(run.timing.load_stall_cycles, closed.load_stall_cycles);
    ASSERT_EQ(run.timing.fill_drain_cycles, closed.fill_drain_cycles);
    const std::vector<float> plain = plainMatmul(o, s, a);
    for (size_t j = 0; j < plain.size(); ++j)
      ASSERT_EQ(std::bit_cast<uint32_t>(run.out[j]), std::bit_cast<uint32_t>(plain[j])) << j;
  }
}

// The numerics library (what --functional and the reference use) against the
// array itself: f32 inputs split into bf16 parts, one fold sweep per pass in
// the library's pass order, on every dataflow.
TEST(PeArray, OutputsEqualTheMxuNumericsLibraryBitForBit) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-10, 10);
  const MatmulShape one{9, 70, 11, 1};
  std::vector<float> lhs(one.m * one.k), rhs(one.k * one.n);
  for (float& v : lhs) v = std::ldexp(value(rng), exponent(rng));
  for (float& v : rhs) v = std::ldexp(value(rng), exponent(rng));
  const auto part = [](float x, numerics::Bf16Part which) {
    const numerics::Bf16Parts parts = numerics::splitToBf16(x);
    return which == numerics::Bf16Part::kHi ? parts.hi : which == numerics::Bf16Part::kMid ? parts.mid : parts.lo;
  };
  for (Dataflow dataflow : kDataflows) {
    for (auto precision :
         {numerics::MatmulPrecision::kDefault, numerics::MatmulPrecision::kHigh, numerics::MatmulPrecision::kHighest}) {
      numerics::MatmulNumerics config;
      config.lhs_dtype = config.rhs_dtype = DType::kF32;
      config.precision = precision;
      config.dataflow = dataflow;
      config.rows = 16;
      std::vector<std::vector<float>> storage;
      for (const numerics::MatmulPass& pass : numerics::matmulPassOrder(config)) {
        std::vector<float> a(lhs.size()), b(rhs.size());
        for (size_t i = 0; i < a.size(); ++i) a[i] = part(lhs[i], pass.lhs);
        for (size_t i = 0; i < b.size(); ++i) b[i] = part(rhs[i], pass.rhs);
        storage.push_back(std::move(a));
        storage.push_back(std::move(b));
      }
      std::vector<PassOperands> passes;
      for (size_t i = 0; i < storage.size(); i += 2) passes.push_back({storage[i], storage[i + 1]});
      const MatmulShape shape{one.m, one.k, one.n, passes.size()};
      const PeArrayRun run = simulatePeArray({16, 8, dataflow, true}, shape, passes);
      std::vector<float> expected(one.m * one.n);
      numerics::mxuMatmul(config, lhs, rhs, expected, one.m, one.k, one.n);
      for (size_t j = 0; j < expected.size(); ++j) {
        ASSERT_EQ(std::bit_cast<uint32_t>(run.out[j]), std::bit_cast<uint32_t>(expected[j]))
            << dataflowName(dataflow) << " passes " << passes.size() << " element " << j;
      }
    }
  }
}

// Full-size arrays, a few cases each way (each costs cycles x R x C steps).
TEST(PeArray, AgreesWithTheClosedFormOnTpuSizedArrays) {
  struct Case {
    ArrayConfig array;
    MatmulShape shape;
  };
  const Case cases[] = {
      {{128, 128, Dataflow::kWeightStationary, true}, {200, 300, 150, 1}},
      {{128, 128, Dataflow::kWeightStationary, false}, {40, 260, 129, 1}},
      {{128, 128, Dataflow::kInputStationary, true}, {96, 130, 300, 1}},
      {{128, 128, Dataflow::kOutputStationary, true}, {150, 64, 260, 1}},
      {{256, 64, Dataflow::kOutputStationary, false}, {300, 33, 100, 1}},
      {{64, 256, Dataflow::kWeightStationary, true}, {50, 100, 520, 3}},
      {{128, 128, Dataflow::kWeightStationary, true}, {200, 300, 150, 1, 2}},
      {{128, 128, Dataflow::kInputStationary, false}, {96, 130, 300, 1, 2}},
      {{128, 128, Dataflow::kOutputStationary, true}, {150, 64, 260, 1, 2}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(dataflowName(c.array.dataflow)) + " " + std::to_string(c.array.rows) + "x" +
                 std::to_string(c.array.cols));
    const ArrayTiming pe = simulatePeArray(c.array, c.shape, {}).timing;
    const ArrayTiming closed = arrayTiming(c.array, c.shape);
    EXPECT_EQ(pe.cycles, closed.cycles);
    EXPECT_EQ(pe.load_stall_cycles, closed.load_stall_cycles);
    EXPECT_EQ(pe.fill_drain_cycles, closed.fill_drain_cycles);
  }
}

// Starting each fold one cycle before the controller's rule allows breaks a
// register somewhere in the array: the rule is tight. Each case is bound by
// the rule the comment names (the port alone would allow the earlier start).
TEST(PeArray, StartingAFoldACycleEarlyIsAHazard) {
  struct Case {
    ArrayConfig array;
    MatmulShape shape;
  };
  const Case cases[] = {
      {{8, 8, Dataflow::kWeightStationary, true}, {3, 16, 8, 1}},   // next tile still shifting in
      {{8, 8, Dataflow::kWeightStationary, false}, {3, 16, 8, 1}},  // weights overwritten in use
      {{8, 8, Dataflow::kWeightStationary, true}, {20, 16, 8, 1}},  // port: two rows in one cycle
      {{8, 8, Dataflow::kInputStationary, true}, {8, 16, 3, 1}},    // next tile still shifting in
      {{8, 8, Dataflow::kOutputStationary, true}, {16, 3, 8, 1}},   // output registers still full
      {{8, 8, Dataflow::kOutputStationary, false}, {16, 3, 8, 1}},  // accumulators still draining
      {{8, 8, Dataflow::kOutputStationary, true}, {16, 20, 8, 1}},  // port
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(dataflowName(c.array.dataflow)) + (c.array.double_buffered ? " double" : " single"));
    EXPECT_EQ(simulatePeArray(c.array, c.shape, {}).timing.cycles, arrayTiming(c.array, c.shape).cycles);
    try {
      simulatePeArray(c.array, c.shape, {}, 1);
      ADD_FAILURE() << "no hazard";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInternal);
      EXPECT_NE(std::string(e.what()).find("PE array hazard"), std::string::npos) << e.what();
    }
  }
}

TEST(PeArray, BadShapesAreErrors) {
  EXPECT_THROW(simulatePeArray({8, 8, Dataflow::kWeightStationary, true}, {0, 8, 8, 1}, {}), Error);
  EXPECT_THROW(simulatePeArray({8, 2000, Dataflow::kWeightStationary, true}, {8, 8, 8, 1}, {}), Error);
  EXPECT_THROW(simulatePeArray({8, 8, Dataflow::kWeightStationary, true}, {8, 8, 8, 1, 0}, {}), Error);
  EXPECT_THROW(simulatePeArray({8, 8, Dataflow::kOutputStationary, true}, {8, 8, 8, 1, 9}, {}), Error);
}

}  // namespace
}  // namespace tpusim
