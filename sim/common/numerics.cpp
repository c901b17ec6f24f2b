#include "sim/common/numerics.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace tpusim::numerics {

uint16_t floatToBf16Bits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x0040);  // keep sign, force quiet
  // Add 0x7fff plus the lowest kept bit: rounds to nearest, ties to the even neighbour.
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float bf16BitsToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

uint16_t floatToF16Bits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));  // NaN
  if (magnitude >= 0x47800000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65536: infinity (or inf input)
  const int exponent = static_cast<int>(magnitude >> 23) - 127;
  if (exponent >= -14) {
    // Normal f16: keep 10 of 23 mantissa bits, round the 13 dropped ones to nearest even.
    const uint32_t rebased = magnitude - (112u << 23);  // exponent bias 127 -> 15
    const uint32_t rounding = 0x0fffu + ((rebased >> 13) & 1u);
    const uint32_t rounded = (rebased + rounding) >> 13;  // a carry into the exponent is correct, up to infinity
    return static_cast<uint16_t>(sign | rounded);
  }
  // Subnormal f16 (or zero): value / 2^-24 rounded to an integer, ties to even.
  if (exponent < -25) return sign;                                // below half the smallest subnormal
  const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;  // implicit bit
  // value = mantissa x 2^(exponent - 23) and a subnormal step is 2^-24: drop -exponent - 1 bits (14 .. 24).
  const int drop = -exponent - 1;
  const uint32_t half = 1u << (drop - 1);
  const uint32_t kept = mantissa >> drop;
  const uint32_t remainder = mantissa & ((1u << drop) - 1u);
  const uint32_t rounded = kept + ((remainder > half || (remainder == half && (kept & 1u))) ? 1u : 0u);
  return static_cast<uint16_t>(sign | rounded);
}

float f16BitsToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // exact
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

int8_t floatToInt8(float value) {
  if (std::isnan(value)) return 0;
  const float rounded = std::nearbyint(value);  // default rounding mode: ties to even
  if (rounded >= 127.0f) return 127;
  if (rounded <= -128.0f) return -128;
  return static_cast<int8_t>(rounded);
}

float roundTo(DType dtype, float value) {
  switch (dtype) {
    case DType::kF32: return value;
    case DType::kBF16: return bf16BitsToFloat(floatToBf16Bits(value));
    case DType::kF16: return f16BitsToFloat(floatToF16Bits(value));
    case DType::kInt8: return static_cast<float>(floatToInt8(value));
    case DType::kUInt8: {
      if (std::isnan(value)) return 0.0f;
      return std::clamp(std::nearbyint(value), 0.0f, 255.0f);
    }
    case DType::kInt32:
    case DType::kUInt32:
    case DType::kUInt64:
    case DType::kInt64: {
      if (std::isnan(value)) return 0.0f;
      return std::nearbyint(value);
    }
    case DType::kBool: return value != 0.0f ? 1.0f : 0.0f;
    case DType::kF64: return value;
  }
  return value;
}

void roundInPlace(DType dtype, std::span<float> values) {
  if (dtype == DType::kF32) return;
  for (float& value : values) value = roundTo(dtype, value);
}

namespace {

// The float nearest to `value` toward zero, with its lowest bit set if that
// was inexact (round to odd): the bits a later rounding needs are all kept.
float toFloatRoundToOdd(double value) {
  if (std::isnan(value)) return static_cast<float>(value);
  float narrowed = static_cast<float>(value);
  if (std::abs(static_cast<double>(narrowed)) > std::abs(value)) {
    narrowed = std::nextafter(narrowed, 0.0f);  // infinity too becomes the largest float
  }
  if (static_cast<double>(narrowed) == value) return narrowed;
  return std::bit_cast<float>(std::bit_cast<uint32_t>(narrowed) | 1u);
}

}  // namespace

double roundTo(DType dtype, double value) {
  switch (dtype) {
    case DType::kF64: return value;
    case DType::kF32: return static_cast<float>(value);
    case DType::kBF16:
    case DType::kF16: return roundTo(dtype, toFloatRoundToOdd(value));
    case DType::kInt8: {
      if (std::isnan(value)) return 0.0;
      return std::clamp(std::nearbyint(value), -128.0, 127.0);
    }
    case DType::kUInt8: {
      if (std::isnan(value)) return 0.0;
      return std::clamp(std::nearbyint(value), 0.0, 255.0);
    }
    case DType::kInt32:
    case DType::kUInt32:
    case DType::kUInt64:
    case DType::kInt64: {
      if (std::isnan(value)) return 0.0;
      return std::nearbyint(value);
    }
    case DType::kBool: return value != 0.0 ? 1.0 : 0.0;
  }
  return value;
}

void roundInPlace(DType dtype, std::span<double> values) {
  if (dtype == DType::kF64) return;
  for (double& value : values) value = roundTo(dtype, value);
}

}  // namespace tpusim::numerics
