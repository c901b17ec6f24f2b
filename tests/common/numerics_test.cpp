#include "sim/common/numerics.hpp"

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include <gtest/gtest.h>

namespace tpusim::numerics {
namespace {

float fromBits(uint32_t bits) {
  return std::bit_cast<float>(bits);
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(floatToBf16Bits(1.0f), 0x3f80);
  EXPECT_EQ(floatToBf16Bits(fromBits(0x3f808000)), 0x3f80);  // halfway, 0x3f80 is even: down
  EXPECT_EQ(floatToBf16Bits(fromBits(0x3f818000)), 0x3f82);  // halfway, 0x3f81 is odd: up
  EXPECT_EQ(floatToBf16Bits(fromBits(0x3f808001)), 0x3f81);  // above halfway: up
  EXPECT_EQ(floatToBf16Bits(fromBits(0x7f7fffff)), 0x7f80);  // largest float rounds to infinity
  EXPECT_EQ(floatToBf16Bits(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(bf16BitsToFloat(floatToBf16Bits(std::numeric_limits<float>::quiet_NaN()))));
  // A signalling-looking NaN whose payload sits in the low bits must not become infinity.
  EXPECT_TRUE(std::isnan(bf16BitsToFloat(floatToBf16Bits(fromBits(0x7f800001)))));
}

TEST(Bf16, EveryBf16ValueRoundTrips) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float value = bf16BitsToFloat(static_cast<uint16_t>(bits));
    if (std::isnan(value)) continue;
    EXPECT_EQ(floatToBf16Bits(value), bits);
  }
}

TEST(F16, KnownValues) {
  EXPECT_EQ(floatToF16Bits(1.0f), 0x3c00);
  EXPECT_EQ(floatToF16Bits(65504.0f), 0x7bff);  // largest f16
  EXPECT_EQ(floatToF16Bits(65520.0f), 0x7c00);  // halfway to 65536, ties to even: infinity
  EXPECT_EQ(floatToF16Bits(65519.0f), 0x7bff);
  EXPECT_EQ(floatToF16Bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(floatToF16Bits(std::ldexp(1.0f, -25)), 0x0000);  // halfway to it, ties to even: zero
  EXPECT_EQ(floatToF16Bits(std::ldexp(3.0f, -26)), 0x0001);  // above halfway
  EXPECT_EQ(floatToF16Bits(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 steps: tie, to even 2
  EXPECT_EQ(floatToF16Bits(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(floatToF16Bits(-2.0f), 0xc000);
}

TEST(F16, EveryF16ValueRoundTrips) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float value = f16BitsToFloat(static_cast<uint16_t>(bits));
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(f16BitsToFloat(floatToF16Bits(value))));
      continue;
    }
    EXPECT_EQ(floatToF16Bits(value), bits) << bits;
  }
}

TEST(F16, MatchesTheCompilersFloat16OnRandomFloats) {
  // GCC's _Float16 conversion is an independent IEEE round-to-nearest-even oracle.
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits_dist;
  for (int i = 0; i < 2'000'000; ++i) {
    uint32_t bits = bits_dist(rng);
    // Concentrate on the f16 range: exponents 2^-30 .. 2^17 carry the interesting cases.
    bits = (bits & 0x807fffffu) | ((97u + (bits >> 23) % 48u) << 23);
    const float value = fromBits(bits);
    const _Float16 oracle = static_cast<_Float16>(value);
    EXPECT_EQ(floatToF16Bits(value), std::bit_cast<uint16_t>(oracle)) << std::hex << bits;
  }
}

TEST(Int8, RoundsHalfToEvenAndSaturates) {
  EXPECT_EQ(floatToInt8(2.5f), 2);
  EXPECT_EQ(floatToInt8(3.5f), 4);
  EXPECT_EQ(floatToInt8(-2.5f), -2);
  EXPECT_EQ(floatToInt8(300.0f), 127);
  EXPECT_EQ(floatToInt8(-300.0f), -128);
  EXPECT_EQ(floatToInt8(std::numeric_limits<float>::quiet_NaN()), 0);
}

TEST(RoundTo, StorageTypes) {
  EXPECT_EQ(roundTo(DType::kF32, 1.1f), 1.1f);
  EXPECT_EQ(roundTo(DType::kBF16, 1.1f), bf16BitsToFloat(floatToBf16Bits(1.1f)));
  EXPECT_EQ(roundTo(DType::kF16, 1.1f), f16BitsToFloat(floatToF16Bits(1.1f)));
  EXPECT_NE(roundTo(DType::kBF16, 1.1f), 1.1f);
  std::vector<float> values = {1.1f, 2.5f};
  roundInPlace(DType::kInt8, values);
  EXPECT_EQ(values, (std::vector<float>{1.0f, 2.0f}));
}

// The nearest of a narrow type's values to `value`, ties to the even one, by brute force over
// the neighbours of the float rounding (values holds every one of the type's values near it).
double nearestOf(double value, uint16_t (*toBits)(float), float (*fromBits16)(uint16_t)) {
  const uint16_t middle = toBits(static_cast<float>(value));
  uint16_t best = middle;
  for (int delta : {-1, 1}) {
    const auto bits = static_cast<uint16_t>(middle + delta);
    const double gap = std::abs(fromBits16(bits) - value);
    const double best_gap = std::abs(fromBits16(best) - value);
    if (gap < best_gap || (gap == best_gap && (bits & 1u) == 0)) best = bits;
  }
  return fromBits16(best);
}

// A point just off (or on) the tie between the narrow type's value at `value` and the next
// one up: where a rounding through float would go wrong.
double nearTie(double value, int side, uint16_t (*toBits)(float), float (*fromBits16)(uint16_t)) {
  const uint16_t bits = toBits(static_cast<float>(value));
  const double tie = (static_cast<double>(fromBits16(bits)) + fromBits16(static_cast<uint16_t>(bits + 1))) / 2;
  return tie + side * std::abs(tie) * std::ldexp(1.0, -35);
}

TEST(RoundTo, DoublesRoundOnceToEachType) {
  EXPECT_EQ(roundTo(DType::kF64, 0.1), 0.1);
  EXPECT_EQ(roundTo(DType::kF32, 0.1), static_cast<double>(0.1f));
  // 1 + 2^-8 + 2^-40 is just above a bf16 tie: through float (a tie, then to even) it would
  // become 1; rounded once it is 1 + 2^-7. Likewise for f16 at 1 + 2^-11 + 2^-40.
  EXPECT_EQ(roundTo(DType::kBF16, 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)), 1.0 + std::ldexp(1.0, -7));
  EXPECT_EQ(roundTo(DType::kF16, 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)), 1.0 + std::ldexp(1.0, -10));
  EXPECT_EQ(roundTo(DType::kBF16, 1.0 + std::ldexp(1.0, -8)), 1.0);  // an exact tie goes to even
  EXPECT_EQ(roundTo(DType::kBF16, 1e300), std::numeric_limits<double>::infinity());
  EXPECT_EQ(roundTo(DType::kF16, -1e-300), 0.0);
  EXPECT_TRUE(std::signbit(roundTo(DType::kF16, -1e-300)));
  EXPECT_TRUE(std::isnan(roundTo(DType::kBF16, std::nan(""))));
  EXPECT_EQ(roundTo(DType::kInt8, 300.0), 127.0);
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-20, 14);
  for (int i = 0; i < 200000; ++i) {
    const double value = std::ldexp(mantissa(rng), exponent(rng)) * (i % 2 ? 1 : -1);
    const int side = i % 3 - 1;
    const double bf16 = i % 4 < 2 ? value : nearTie(value, side, floatToBf16Bits, bf16BitsToFloat);
    const double f16 = i % 4 < 2 ? value : nearTie(value, side, floatToF16Bits, f16BitsToFloat);
    ASSERT_EQ(roundTo(DType::kBF16, bf16), nearestOf(bf16, floatToBf16Bits, bf16BitsToFloat)) << bf16;
    ASSERT_EQ(roundTo(DType::kF16, f16), nearestOf(f16, floatToF16Bits, f16BitsToFloat)) << f16;
  }
  std::vector<double> values = {1.1, 2.5};
  roundInPlace(DType::kF64, values);
  EXPECT_EQ(values, (std::vector<double>{1.1, 2.5}));
}

// roundInPlace's bf16 loop takes blocks of values that are exactly floats by their bits alone:
// it must give roundTo()'s bits for every kind of value, whether a block is all floats or mixed.
TEST(Bf16, RoundingInPlaceGivesRoundTosBitsInEveryBlock) {
  std::mt19937_64 rng(17);
  std::uniform_int_distribution<uint32_t> float_bits;
  std::uniform_int_distribution<uint64_t> double_bits;
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> special = {0.0,
                                       -0.0,
                                       inf,
                                       -inf,
                                       std::numeric_limits<double>::quiet_NaN(),
                                       static_cast<double>(fromBits(0x3f808000)),  // a tie, to even
                                       static_cast<double>(fromBits(0x00000001)),  // the smallest subnormal
                                       static_cast<double>(fromBits(0x7f7fffff)),  // rounds up to infinity
                                       1e300,
                                       -1e-300,
                                       1.0 + std::ldexp(1.0, -40)};
  // Blocks of 64: all floats (a quarter of them ties, half of those odd), floats with one double
  // that is not, the specials that are floats (the bits path), and every special.
  const std::vector<double> float_specials(special.begin(), special.begin() + 4);
  std::vector<double> values;
  for (int block = 0; block < 400; ++block) {
    for (int i = 0; i < 64; ++i) {
      uint32_t bits = float_bits(rng);
      if (i % 4 == 0) bits = (bits & 0xffff0000u) | 0x8000u;  // halfway between two bf16 values
      double v = static_cast<double>(fromBits(bits));
      if (std::isnan(v)) v = 1.5;
      if (block % 4 == 1 && i == block % 64) v = std::bit_cast<double>(double_bits(rng));
      if (block % 4 == 2) v = i < 8 ? static_cast<double>(fromBits(0x7f7fffff - static_cast<uint32_t>(i))) : v;
      if (block % 4 == 2 && i >= 8 && i < 12) v = float_specials[static_cast<size_t>(i - 8)];
      if (block % 4 == 3) v = special[static_cast<size_t>(i) % special.size()];
      values.push_back(v);
    }
  }
  values.resize(values.size() - 5);  // and a short last block
  std::vector<double> rounded = values;
  roundInPlace(DType::kBF16, rounded);
  for (size_t i = 0; i < values.size(); ++i) {
    const double expected = roundTo(DType::kBF16, values[i]);
    ASSERT_EQ(std::bit_cast<uint64_t>(rounded[i]), std::bit_cast<uint64_t>(expected))
        << "value " << values[i] << " at " << i;
  }
}

}  // namespace
}  // namespace tpusim::numerics
