// Conversions between float and the bits of bf16 and f16, rounding to nearest,
// ties to even (NaN stays a quiet NaN, overflow goes to infinity), and a double's
// float rounded to odd. Plain C++17 and inline, marked __host__ __device__ under
// nvcc: the CPU numerics (numerics.hpp) and the CUDA kernels (reference/cuda/kernels)
// round with the same code, so their bits agree.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define TPUSIM_HOST_DEVICE __host__ __device__
#else
#define TPUSIM_HOST_DEVICE
#endif

namespace tpusim::numerics {

TPUSIM_HOST_DEVICE inline uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

TPUSIM_HOST_DEVICE inline float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

TPUSIM_HOST_DEVICE inline bool isNan(float value) { return (bitsOf(value) & 0x7fffffffu) > 0x7f800000u; }

TPUSIM_HOST_DEVICE inline uint16_t floatToBf16Bits(float value) {
  const uint32_t bits = bitsOf(value);
  if (isNan(value)) return static_cast<uint16_t>((bits >> 16) | 0x0040);  // keep sign, force quiet
  // Add 0x7fff plus the lowest kept bit: rounds to nearest, ties to the even neighbour.
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

TPUSIM_HOST_DEVICE inline float bf16BitsToFloat(uint16_t bits) { return floatOf(static_cast<uint32_t>(bits) << 16); }

TPUSIM_HOST_DEVICE inline uint16_t floatToF16Bits(float value) {
  const uint32_t bits = bitsOf(value);
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

TPUSIM_HOST_DEVICE inline float f16BitsToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) return floatOf(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;  // x 2^-24, exact
    return sign ? -magnitude : magnitude;
  }
  return floatOf(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// The float nearest to `value` toward zero, with its lowest bit set if that was
// inexact (round to odd): the bits a later rounding to bf16 or f16 needs are all
// kept (the float keeps 13 or more bits beyond either), so that rounding is correct.
TPUSIM_HOST_DEVICE inline float toFloatRoundToOdd(double value) {
  if (value != value) return static_cast<float>(value);
  float narrowed = static_cast<float>(value);
  const double magnitude = value < 0 ? -value : value;
  const double narrowed_magnitude = narrowed < 0 ? -static_cast<double>(narrowed) : static_cast<double>(narrowed);
  // One step toward zero (infinity too becomes the largest float).
  if (narrowed_magnitude > magnitude) narrowed = floatOf(bitsOf(narrowed) - 1u);
  if (static_cast<double>(narrowed) == value) return narrowed;
  return floatOf(bitsOf(narrowed) | 1u);
}

}  // namespace tpusim::numerics
