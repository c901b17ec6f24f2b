// The MXU matmul numerics against the contract in matmul_numerics.hpp: a
// literal per-element reference (bit-exact), closed cases with the arithmetic
// written out, and the accuracy of the f32 passes. Bad input:
// matmul_numerics_errors_test.cpp.
// Compiled with -ffp-contract=off, like the library, so the reference rounds
// every product too.
#include "sim/common/matmul_numerics.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "sim/common/numerics.hpp"

namespace tpusim::numerics {
namespace {

// Part 0, 1 or 2 (hi, mid, lo) of x as the MXU multiplies it.
float partOf(DType dtype, float x, int part) {
  if (dtype != DType::kF32) return roundTo(dtype, x);
  const float hi = roundTo(DType::kBF16, x);
  const float mid = roundTo(DType::kBF16, x - hi);
  const float lo = roundTo(DType::kBF16, x - hi - mid);
  return part == 0 ? hi : part == 1 ? mid : lo;
}

using Passes = std::vector<std::pair<int, int>>;  // (lhs part, rhs part) in accumulation order

Passes contractPasses(const MatmulNumerics& numerics) {
  if (numerics.lhs_dtype != DType::kF32 || numerics.precision == MatmulPrecision::kDefault) return {{0, 0}};
  if (numerics.precision == MatmulPrecision::kHigh) return {{1, 0}, {0, 1}, {0, 0}};
  return {{2, 0}, {1, 1}, {0, 2}, {1, 0}, {0, 1}, {0, 0}};
}

// The contract written out literally, one output element at a time.
std::vector<float> referenceMatmul(const MatmulNumerics& numerics, const std::vector<float>& lhs,
                                   const std::vector<float>& rhs, uint64_t m, uint64_t k, uint64_t n,
                                   const Passes& passes) {
  const auto product = [&](uint64_t i, uint64_t kk, uint64_t j, std::pair<int, int> pass) {
    return partOf(numerics.lhs_dtype, lhs[i * k + kk], pass.first) *
           partOf(numerics.rhs_dtype, rhs[kk * n + j], pass.second);
  };
  std::vector<float> out(m * n);
  for (uint64_t i = 0; i < m; ++i) {
    for (uint64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (const auto& pass : passes) {
        // Output-stationary: one block, all of K summed in the PE.
        const uint64_t rows = numerics.dataflow == Dataflow::kOutputStationary ? k : numerics.rows;
        for (uint64_t start = 0; start < k; start += rows) {
          float s = 0.0f;
          for (uint64_t kk = start; kk < k && kk < start + rows; ++kk) s = s + product(i, kk, j, pass);
          acc = acc + s;
        }
      }
      out[i * n + j] = acc;
    }
  }
  return out;
}

std::vector<float> runMatmul(const MatmulNumerics& numerics, const std::vector<float>& lhs,
                             const std::vector<float>& rhs, uint64_t m, uint64_t k, uint64_t n) {
  std::vector<float> out(m * n);
  mxuMatmul(numerics, lhs, rhs, out, m, k, n);
  return out;
}

// Uniform [-1, 1] scaled by 2^e, e in [min_exp, max_exp]; one value in ten is zero.
std::vector<float> wideValues(std::mt19937& rng, size_t count, int min_exp, int max_exp) {
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(min_exp, max_exp);
  std::uniform_int_distribution<int> tenth(0, 9);
  std::vector<float> values(count);
  for (float& value : values) value = tenth(rng) == 0 ? 0.0f : std::ldexp(unit(rng), exponent(rng));
  return values;
}

std::vector<float> uniformValues(std::mt19937& rng, size_t count) {
  return wideValues(rng, count, 0, 0);
}

// Index of the first element whose bits differ, or -1.
int64_t firstBitDifference(const std::vector<float>& a, const std::vector<float>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i])) return static_cast<int64_t>(i);
  }
  return a.size() == b.size() ? -1 : static_cast<int64_t>(a.size());
}

// max |out - exact| / max |exact|, against fp64 of the unrounded inputs.
double normwiseError(const std::vector<float>& out, const std::vector<float>& lhs, const std::vector<float>& rhs,
                     uint64_t m, uint64_t k, uint64_t n) {
  double max_error = 0.0;
  double max_exact = 0.0;
  for (uint64_t i = 0; i < m; ++i) {
    for (uint64_t j = 0; j < n; ++j) {
      double exact = 0.0;
      for (uint64_t kk = 0; kk < k; ++kk) exact += double(lhs[i * k + kk]) * double(rhs[kk * n + j]);
      max_error = std::max(max_error, std::abs(double(out[i * n + j]) - exact));
      max_exact = std::max(max_exact, std::abs(exact));
    }
  }
  return max_error / max_exact;
}

struct Mode {
  DType dtype;
  MatmulPrecision precision;
};

TEST(MxuMatmul, MatchesTheLiteralContractBitForBit) {
  const Mode modes[] = {{DType::kBF16, MatmulPrecision::kDefault},
                        {DType::kF16, MatmulPrecision::kDefault},
                        {DType::kF32, MatmulPrecision::kDefault},
                        {DType::kF32, MatmulPrecision::kHigh},
                        {DType::kF32, MatmulPrecision::kHighest}};
  const Dataflow dataflows[] = {Dataflow::kWeightStationary, Dataflow::kOutputStationary, Dataflow::kInputStationary};
  const uint64_t m = 7;
  const uint64_t n = 13;
  std::mt19937 rng(2024);
  int cases = 0;
  for (const Mode& mode : modes) {
    // f16 tops out at 65504: keep its inputs finite so no NaN payloads are compared.
    const int max_exp = mode.dtype == DType::kF16 ? 15 : 20;
    for (Dataflow dataflow : dataflows) {
      for (uint64_t rows : {8u, 16u, 128u}) {
        for (uint64_t k : {1u, 37u, 300u}) {  // none a multiple of 8, 16 or 128
          const std::vector<float> lhs = wideValues(rng, m * k, -20, max_exp);
          const std::vector<float> rhs = wideValues(rng, k * n, -20, max_exp);
          const MatmulNumerics numerics{mode.dtype, mode.dtype, mode.precision, dataflow, rows};
          const std::vector<float> got = runMatmul(numerics, lhs, rhs, m, k, n);
          const std::vector<float> want = referenceMatmul(numerics, lhs, rhs, m, k, n, contractPasses(numerics));
          const int64_t bad = firstBitDifference(got, want);
          EXPECT_EQ(bad, -1) << dtypeName(mode.dtype) << " precision " << int(mode.precision) << " dataflow "
                             << int(dataflow) << " R=" << rows << " K=" << k << ": " << got[bad] << " vs " << want[bad];
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 5 * 3 * 3 * 3);
}

TEST(MxuMatmul, TilesAndThreadsKeepTheContractsBits) {
  // mxuMatmul computes 4 x 8 output tiles over K chunks of 128 and rhs panels of 512
  // columns, its rows split over the threads: m = 37 leaves 1- to 3-row tiles at every
  // split, n = 530 a second panel and a 2-column edge, K = 300 three chunks, and rows
  // 200 (and output-stationary's one block of all K) block sums that span chunks.
  const uint64_t m = 37;
  const uint64_t k = 300;
  const uint64_t n = 530;
  struct Case {
    Mode mode;
    Dataflow dataflow;
    uint64_t rows;
  };
  const Case cases[] = {{{DType::kBF16, MatmulPrecision::kDefault}, Dataflow::kWeightStationary, 128},
                        {{DType::kBF16, MatmulPrecision::kDefault}, Dataflow::kWeightStationary, 200},
                        {{DType::kF16, MatmulPrecision::kDefault}, Dataflow::kOutputStationary, 128},
                        {{DType::kF32, MatmulPrecision::kHighest}, Dataflow::kInputStationary, 200},
                        {{DType::kF32, MatmulPrecision::kHigh}, Dataflow::kOutputStationary, 128}};
  std::mt19937 rng(77);
  for (const Case& c : cases) {
    const int max_exp = c.mode.dtype == DType::kF16 ? 6 : 20;
    const std::vector<float> lhs = wideValues(rng, m * k, -20, max_exp);
    const std::vector<float> rhs = wideValues(rng, k * n, -20, max_exp);
    const MatmulNumerics numerics{c.mode.dtype, c.mode.dtype, c.mode.precision, c.dataflow, c.rows};
    const std::vector<float> want = referenceMatmul(numerics, lhs, rhs, m, k, n, contractPasses(numerics));
    for (int threads : {1, 2, 3}) {
      std::vector<float> got(m * n, 1.0f);  // not zeros: every element must be written
      mxuMatmul(numerics, lhs, rhs, got, m, k, n, threads);
      const int64_t bad = firstBitDifference(got, want);
      EXPECT_EQ(bad, -1) << dtypeName(c.mode.dtype) << " precision " << int(c.mode.precision) << " dataflow "
                         << int(c.dataflow) << " R=" << c.rows << " threads " << threads << ": element " << bad;
    }
  }
}

TEST(MxuMatmul, Int8ThreadsKeepTheExactWrappedSums) {
  const uint64_t m = 11;
  const uint64_t k = 70;
  const uint64_t n = 9;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> values(-128, 127);
  std::vector<int8_t> lhs(m * k);
  std::vector<int8_t> rhs(k * n);
  for (int8_t& v : lhs) v = static_cast<int8_t>(values(rng));
  for (int8_t& v : rhs) v = static_cast<int8_t>(values(rng));
  const MatmulNumerics numerics{DType::kInt8, DType::kInt8};
  for (int threads : {1, 2, 4}) {
    std::vector<int32_t> out(m * n, 1);
    mxuMatmul(numerics, std::span<const int8_t>(lhs), std::span<const int8_t>(rhs), out, m, k, n, threads);
    for (uint64_t i = 0; i < m; ++i) {
      for (uint64_t j = 0; j < n; ++j) {
        int64_t sum = 0;
        for (uint64_t kk = 0; kk < k; ++kk) sum += int64_t{lhs[i * k + kk]} * rhs[kk * n + j];
        ASSERT_EQ(out[i * n + j], sum) << "threads " << threads << " at " << i << "," << j;
      }
    }
  }
}

// x with its low 16 bits replaced by `low` (bit 15 clear): hi = bf16(x) is
// x truncated, whatever `low` is, so two such values share hi.
float withLowBits(float x, uint32_t low) {
  return std::bit_cast<float>((std::bit_cast<uint32_t>(x) & 0xffff0000u) | (low & 0x7fffu));
}

TEST(MxuMatmul, PassOrderShowsWhereHiTimesHiCancels) {
  // Random data hides the pass order: the small passes' rounding sits far
  // below hi*hi's last bit. Here k = 2t and 2t+1 pair up inside a block:
  // lhs holds a and a' with equal hi, rhs holds b and -b' with equal hi, so
  // the hi*hi pass sums h_a*h_b - h_a*h_b = 0 exactly and the smaller
  // passes, in their order, make the result's bits.
  const uint64_t m = 6;
  const uint64_t k = 96;
  const uint64_t n = 5;
  std::mt19937 rng(99);
  std::uniform_int_distribution<uint32_t> low_bits;
  std::vector<float> lhs = wideValues(rng, m * k, -8, 8);
  std::vector<float> rhs = wideValues(rng, k * n, -8, 8);
  for (uint64_t t = 0; t < k; t += 2) {
    for (uint64_t i = 0; i < m; ++i) {
      lhs[i * k + t] = withLowBits(lhs[i * k + t], low_bits(rng));
      lhs[i * k + t + 1] = withLowBits(lhs[i * k + t], low_bits(rng));
    }
    for (uint64_t j = 0; j < n; ++j) {
      rhs[t * n + j] = withLowBits(rhs[t * n + j], low_bits(rng));
      rhs[(t + 1) * n + j] = -withLowBits(rhs[t * n + j], low_bits(rng));
    }
  }
  for (MatmulPrecision precision : {MatmulPrecision::kHigh, MatmulPrecision::kHighest}) {
    const MatmulNumerics numerics{DType::kF32, DType::kF32, precision, Dataflow::kWeightStationary, 16};
    const Passes passes = contractPasses(numerics);
    const std::vector<float> want = referenceMatmul(numerics, lhs, rhs, m, k, n, passes);
    EXPECT_EQ(firstBitDifference(runMatmul(numerics, lhs, rhs, m, k, n), want), -1) << int(precision);
    // The data is sharp enough to see neighbouring passes swapped where both
    // are of mid*hi's size (2^-8 of hi*hi) or one is and the other smaller.
    // Swaps among lo*hi, mid*mid and hi*lo (2^-16) stay out of sight below
    // mid*hi's last bit, and hi*hi adds exact zeros: PassCountsAndOrder checks those.
    const std::vector<size_t> visible =
        precision == MatmulPrecision::kHigh ? std::vector<size_t>{0} : std::vector<size_t>{2, 3};
    for (size_t p : visible) {
      Passes swapped = passes;
      std::swap(swapped[p], swapped[p + 1]);
      EXPECT_NE(firstBitDifference(referenceMatmul(numerics, lhs, rhs, m, k, n, swapped), want), -1)
          << int(precision) << " swap " << p;
    }
  }
}

TEST(MxuMatmul, BlockSumsMakeWeightStationaryDifferFromOutputStationary) {
  // K = 4, R = 2, lhs = [2^24, 1, 1, 1], rhs all ones (every value exact in bf16).
  // Floats near 2^24 are spaced 2, so 2^24 + 1 is a tie that rounds to even 2^24.
  // WS: block 0: s = 2^24 + 1 -> 2^24; block 1: s = 1 + 1 = 2; acc = 2^24 + 2 (exact).
  // OS: 2^24, + 1 -> 2^24, + 1 -> 2^24, + 1 -> 2^24: every 1 is lost.
  const std::vector<float> lhs = {16777216.0f, 1.0f, 1.0f, 1.0f};
  const std::vector<float> rhs = {1.0f, 1.0f, 1.0f, 1.0f};
  MatmulNumerics numerics{DType::kBF16, DType::kBF16, MatmulPrecision::kDefault, Dataflow::kWeightStationary, 2};
  EXPECT_EQ(runMatmul(numerics, lhs, rhs, 1, 4, 1)[0], 16777218.0f);
  numerics.dataflow = Dataflow::kInputStationary;
  EXPECT_EQ(runMatmul(numerics, lhs, rhs, 1, 4, 1)[0], 16777218.0f);
  numerics.dataflow = Dataflow::kOutputStationary;
  EXPECT_EQ(runMatmul(numerics, lhs, rhs, 1, 4, 1)[0], 16777216.0f);
}

TEST(MxuMatmul, UnderflowingProductsRoundBeforeTheAdd) {
  // bf16 products are exact in float unless they underflow; there the
  // product's own rounding shows. K = 2, lhs = [2^-75, 1.5 * 2^-75], rhs = [2^-74, 2^-74]:
  // p0 = 2^-149 (the smallest subnormal), p1 = 1.5 * 2^-149, a tie that rounds to even 2 * 2^-149;
  // s = 2^-149 + 2 * 2^-149 = 3 * 2^-149. A fused multiply-add would round 2.5 * 2^-149 once, to 2 * 2^-149.
  const std::vector<float> lhs = {std::ldexp(1.0f, -75), std::ldexp(1.5f, -75)};
  const std::vector<float> rhs = {std::ldexp(1.0f, -74), std::ldexp(1.0f, -74)};
  for (Dataflow dataflow : {Dataflow::kWeightStationary, Dataflow::kOutputStationary}) {
    const MatmulNumerics numerics{DType::kBF16, DType::kBF16, MatmulPrecision::kDefault, dataflow};
    EXPECT_EQ(runMatmul(numerics, lhs, rhs, 1, 2, 1)[0], std::ldexp(3.0f, -149)) << int(dataflow);
  }
}

TEST(MxuMatmul, Int8AccumulatesExactlyAndWrapsModulo2To32) {
  // 127 * 127 * 2^18 = 16129 * 262144 = 4228120576; minus 2^32 = 4294967296 gives -66846720.
  const uint64_t k = uint64_t{1} << 18;
  const std::vector<float> ones(k, 127.0f);
  const MatmulNumerics numerics{DType::kInt8, DType::kInt8};
  std::vector<int32_t> out(1);
  mxuMatmul(numerics, ones, ones, std::span<int32_t>(out), 1, k, 1);
  EXPECT_EQ(out[0], -66846720);
  // Inputs round like floatToInt8: 2.5 -> 2 (ties to even), -300 -> -128. 2*3 + (-128)*1 = -122.
  mxuMatmul(numerics, std::vector<float>{2.5f, -300.0f}, std::vector<float>{3.0f, 1.0f}, std::span<int32_t>(out), 1, 2,
            1);
  EXPECT_EQ(out[0], -122);
}

TEST(MxuMatmul, F32PassesBuyAccuracyInOrder) {
  const uint64_t m = 16;
  const uint64_t k = 256;
  const uint64_t n = 16;
  std::mt19937 rng(11);
  const std::vector<float> lhs = uniformValues(rng, m * k);
  const std::vector<float> rhs = uniformValues(rng, k * n);
  MatmulNumerics numerics{DType::kF32, DType::kF32};
  numerics.precision = MatmulPrecision::kDefault;
  const double one_pass = normwiseError(runMatmul(numerics, lhs, rhs, m, k, n), lhs, rhs, m, k, n);
  numerics.precision = MatmulPrecision::kHigh;
  const double three_passes = normwiseError(runMatmul(numerics, lhs, rhs, m, k, n), lhs, rhs, m, k, n);
  numerics.precision = MatmulPrecision::kHighest;
  const double six_passes = normwiseError(runMatmul(numerics, lhs, rhs, m, k, n), lhs, rhs, m, k, n);
  // bf16 keeps 8 bits (relative step 2^-8 = 3.9e-3): one pass is ~1e-3 off; if passes were
  // ignored, HIGHEST would be that bad too.
  EXPECT_GT(one_pass, 1e-5);
  EXPECT_LT(one_pass, 1e-2);
  EXPECT_LT(three_passes, one_pass / 10);
  EXPECT_GT(three_passes, six_passes);
  EXPECT_LT(six_passes, 1e-6);
}

TEST(MxuMatmul, ExtraPassesOfBf16ValuesAddNothing) {
  // Values already in bf16 have mid = lo = 0, so the extra passes add +0 and
  // HIGH and HIGHEST give DEFAULT's bits, which are bf16 x bf16's.
  const uint64_t m = 5;
  const uint64_t k = 200;
  const uint64_t n = 9;
  std::mt19937 rng(5);
  std::vector<float> lhs = wideValues(rng, m * k, -20, 20);
  std::vector<float> rhs = wideValues(rng, k * n, -20, 20);
  roundInPlace(DType::kBF16, lhs);
  roundInPlace(DType::kBF16, rhs);
  for (Dataflow dataflow : {Dataflow::kWeightStationary, Dataflow::kOutputStationary}) {
    MatmulNumerics numerics{DType::kBF16, DType::kBF16, MatmulPrecision::kDefault, dataflow, 16};
    const std::vector<float> bf16 = runMatmul(numerics, lhs, rhs, m, k, n);
    numerics.lhs_dtype = numerics.rhs_dtype = DType::kF32;
    for (MatmulPrecision precision : {MatmulPrecision::kDefault, MatmulPrecision::kHigh, MatmulPrecision::kHighest}) {
      numerics.precision = precision;
      EXPECT_EQ(firstBitDifference(runMatmul(numerics, lhs, rhs, m, k, n), bf16), -1) << int(precision);
    }
  }
}

TEST(MxuMatmul, PassCountsAndOrder) {
  MatmulNumerics numerics{DType::kF32, DType::kF32, MatmulPrecision::kHighest};
  EXPECT_EQ(matmulPasses(numerics), 6);
  // The order the contract names: lo*hi, mid*mid, hi*lo, mid*hi, hi*mid, hi*hi.
  Passes order;
  for (const MatmulPass& pass : matmulPassOrder(numerics)) order.emplace_back(int(pass.lhs), int(pass.rhs));
  EXPECT_EQ(order, contractPasses(numerics));
  EXPECT_EQ(accumulateDType(numerics), DType::kF32);
  numerics.precision = MatmulPrecision::kHigh;
  EXPECT_EQ(matmulPasses(numerics), 3);
  order.clear();
  for (const MatmulPass& pass : matmulPassOrder(numerics)) order.emplace_back(int(pass.lhs), int(pass.rhs));
  EXPECT_EQ(order, contractPasses(numerics));
  numerics.lhs_dtype = numerics.rhs_dtype = DType::kBF16;  // precision only matters for f32
  EXPECT_EQ(matmulPasses(numerics), 1);
  numerics.lhs_dtype = numerics.rhs_dtype = DType::kInt8;
  EXPECT_EQ(accumulateDType(numerics), DType::kInt32);
  // The split is exact for a float with all 24 bits set: hi + mid + lo == x.
  const float x = std::bit_cast<float>(0x3fffffffu);
  const Bf16Parts parts = splitToBf16(x);
  EXPECT_EQ(double(parts.hi) + double(parts.mid) + double(parts.lo), double(x));
}

}  // namespace
}  // namespace tpusim::numerics
