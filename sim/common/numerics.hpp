// The numerics library shared by the CPU reference executor and (later) the
// simulator's functional mode, so that both round the same way.
//
// Storage types are emulated on float (or double): a value "in bf16" is a
// float whose low 16 bits are zero; f64 is double itself. Every conversion rounds to nearest, ties to even, as
// TPUs and IEEE 754 do; NaN stays NaN, overflow goes to infinity (bf16, f16)
// or saturates (int8, as XLA's float-to-int8 conversion clamps).
#pragma once

#include <cstdint>
#include <span>

#include "sim/common/dtype.hpp"
#include "sim/common/float_bits.hpp"  // floatToBf16Bits, floatToF16Bits and back

namespace tpusim::numerics {

// Round half to even, saturating to [-128, 127]; NaN becomes 0.
int8_t floatToInt8(float value);

// The nearest value representable in `dtype` (f32 is unchanged; integer
// types round to the nearest integer, ties to even, and saturate).
float roundTo(DType dtype, float value);
void roundInPlace(DType dtype, std::span<float> values);

// The same from double, rounded once: f64 is unchanged, f32 is the nearest
// float, and bf16 and f16 go through a float rounded to odd, which leaves a
// correctly rounded result (the float keeps 13 or more bits beyond either).
double roundTo(DType dtype, double value);
void roundInPlace(DType dtype, std::span<double> values);

}  // namespace tpusim::numerics
