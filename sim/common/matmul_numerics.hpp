// The MXU's matmul numerics: which bits a systolic-array matmul produces, as
// a library the simulator's functional mode and reference/cpu share. The
// PE-by-PE simulator must produce exactly these bits; this is the contract.
//
// out[m,n] = sum_k lhs[m,k] * rhs[k,n], lhs [M,K], rhs [K,N], out [M,N], all
// row-major. Inputs arrive as float and are first rounded to the input dtype
// (bf16 and f16 to nearest even, int8 by floatToInt8). Each product a*b is a
// float multiply (exact for bf16 and f16 inputs, but for underflow); every sum
// is a float add rounded to nearest even, never fused with the multiply.
//
// Summation order, per output element:
//  - Weight- and input-stationary: K splits into blocks of R = rows,
//    [0,R), [R,2R), ...; a block's products are summed inside the array in
//    increasing k, from 0.0f, and each block sum is added to the accumulator:
//      acc = 0.0f; for each block { s = 0.0f; for k in block: s = s + a*b;
//                                   acc = acc + s; }
//  - Output-stationary: the PE owns the output and adds every product; the
//    sum leaves the array and is added to the accumulator: one block of all K,
//      acc = 0.0f; s = 0.0f; for k in 0..K-1: s = s + a*b; acc = acc + s;
//  - int8 x int8: exact int32 accumulation, wrapping modulo 2^32; order-free.
//  - f32 x f32: each value splits into bf16 parts, hi = bf16(x),
//    mid = bf16(x - hi), lo = bf16((x - hi) - mid) (float subtractions), and
//    the matmul runs as 1, 3 or 6 bf16 passes (XLA's DEFAULT, HIGH, HIGHEST),
//    smallest terms first:
//      DEFAULT: hi*hi
//      HIGH:    mid*hi, hi*mid, hi*hi
//      HIGHEST: lo*hi, mid*mid, hi*lo, mid*hi, hi*mid, hi*hi   (lhs part * rhs part)
//    Each pass is a full bf16 matmul in the dataflow's order (in the array each
//    pass is its own folds), and all passes add into the same accumulator,
//    pass-major: acc = 0.0f; for each pass, for each block: acc = acc + s.
//    An infinite or NaN f32 input makes its mid and lo NaN, so the multi-pass
//    modes return NaN where DEFAULT would return infinity.
#pragma once

#include <cstdint>
#include <span>

#include "sim/common/dataflow.hpp"
#include "sim/common/dtype.hpp"

namespace tpusim::numerics {

// For f32 inputs: 1, 3 or 6 bf16 passes (XLA's precision names).
enum class MatmulPrecision { kDefault, kHigh, kHighest };
using tpusim::Dataflow;

struct MatmulNumerics {
  // Supported pairs: bf16 x bf16, f16 x f16, int8 x int8, f32 x f32.
  DType lhs_dtype = DType::kBF16;
  DType rhs_dtype = DType::kBF16;
  MatmulPrecision precision = MatmulPrecision::kDefault;  // read only for f32 x f32
  Dataflow dataflow = Dataflow::kWeightStationary;
  uint64_t rows = 128;  // array rows R: the K block summed inside the array (WS, IS)
};

// The bf16 parts of an f32 value: hi + mid + lo == x exactly, unless a part
// falls below float's normal range or hi rounds up to infinity (|x| near
// FLT_MAX).
struct Bf16Parts {
  float hi;
  float mid;
  float lo;
};
Bf16Parts splitToBf16(float value);

enum class Bf16Part : uint8_t { kHi, kMid, kLo };
struct MatmulPass {
  Bf16Part lhs;
  Bf16Part rhs;
};
// The passes in the order they accumulate; one {hi, hi} pass for bf16, f16
// and int8 (whose inputs are used whole).
std::span<const MatmulPass> matmulPassOrder(const MatmulNumerics& numerics);
int matmulPasses(const MatmulNumerics& numerics);

// f32, or int32 for int8 x int8.
DType accumulateDType(const MatmulNumerics& numerics);

// Throws an unsupported Error for a dtype pair the MXU does not take and an
// invalid-config Error for rows 0.
void checkMatmulNumerics(const MatmulNumerics& numerics);

// The float-accumulating pairs (bf16, f16, f32). int8 x int8 is rejected here:
// an int32 result above 2^24 does not survive a float, so it has its own
// overload. Zero dimensions are an invalid-input Error; spans whose sizes are
// not m*k, k*n and m*n are an internal Error. `threads` threads split the
// rows of out between them; the bits do not depend on how many.
void mxuMatmul(const MatmulNumerics& numerics, std::span<const float> lhs, std::span<const float> rhs,
               std::span<float> out, uint64_t m, uint64_t k, uint64_t n, int threads = 1);

// int8 x int8 only, into exact (wrapping) int32: the operands as floats (each rounded to
// int8 first, saturating), or as bytes.
void mxuMatmul(const MatmulNumerics& numerics, std::span<const float> lhs, std::span<const float> rhs,
               std::span<int32_t> out, uint64_t m, uint64_t k, uint64_t n, int threads = 1);
void mxuMatmul(const MatmulNumerics& numerics, std::span<const int8_t> lhs, std::span<const int8_t> rhs,
               std::span<int32_t> out, uint64_t m, uint64_t k, uint64_t n, int threads = 1);

}  // namespace tpusim::numerics
