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

}  // namespace
}  // namespace tpusim::numerics
