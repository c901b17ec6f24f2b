#include "sim/common/numerics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tpusim::numerics {

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
  switch (dtype) {  // chosen once, outside the loop: the MXU numerics round whole operands to bf16
    case DType::kF32: return;
    case DType::kBF16:
      for (float& value : values) value = bf16BitsToFloat(floatToBf16Bits(value));
      return;
    default:
      for (float& value : values) value = roundTo(dtype, value);
  }
}

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

namespace {

// roundTo(kBF16, v) for every value, in blocks: a block whose values are all exactly floats
// (what float arithmetic stores, so round-to-odd leaves them as they are) and none NaN is
// rounded by the bits alone, as floatToBf16Bits does, in branch-free loops the compiler
// vectorizes; any other block value by value.
void roundToBf16InPlace(std::span<double> values) {
  constexpr size_t kBlock = 64;
  for (size_t start = 0; start < values.size(); start += kBlock) {
    double* v = values.data() + start;
    const size_t count = std::min(kBlock, values.size() - start);
    bool floats = true;
    for (size_t i = 0; i < count; ++i) floats &= static_cast<double>(static_cast<float>(v[i])) == v[i];  // NaN: false
    if (!floats) {
      for (size_t i = 0; i < count; ++i) v[i] = roundTo(DType::kBF16, v[i]);
      continue;
    }
    for (size_t i = 0; i < count; ++i) {
      const uint32_t bits = bitsOf(static_cast<float>(v[i]));
      v[i] = floatOf((bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u);
    }
  }
}

}  // namespace

// The dtype is chosen once, outside the loop, so that the common floating cases run as
// straight loops over the values (the CPU executor rounds every op's output).
void roundInPlace(DType dtype, std::span<double> values) {
  switch (dtype) {
    case DType::kF64: return;
    case DType::kF32:
      for (double& value : values) value = static_cast<float>(value);
      return;
    case DType::kBF16: roundToBf16InPlace(values); return;
    default:
      for (double& value : values) value = roundTo(dtype, value);
  }
}

}  // namespace tpusim::numerics
