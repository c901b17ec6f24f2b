// Compiled with -ffp-contract=off (sim/CMakeLists.txt): a fused multiply-add
// would skip the product's rounding and change the bits the contract fixes.
#include "sim/common/matmul_numerics.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/common/numerics.hpp"

namespace tpusim::numerics {

namespace {

constexpr MatmulPass kOnePass[] = {{Bf16Part::kHi, Bf16Part::kHi}};
constexpr MatmulPass kThreePasses[] = {
    {Bf16Part::kMid, Bf16Part::kHi}, {Bf16Part::kHi, Bf16Part::kMid}, {Bf16Part::kHi, Bf16Part::kHi}};
// Smallest terms first, so they are not lost against hi*hi.
constexpr MatmulPass kSixPasses[] = {{Bf16Part::kLo, Bf16Part::kHi},  {Bf16Part::kMid, Bf16Part::kMid},
                                     {Bf16Part::kHi, Bf16Part::kLo},  {Bf16Part::kMid, Bf16Part::kHi},
                                     {Bf16Part::kHi, Bf16Part::kMid}, {Bf16Part::kHi, Bf16Part::kHi}};

bool isF32Pair(const MatmulNumerics& numerics) {
  return numerics.lhs_dtype == DType::kF32 && numerics.rhs_dtype == DType::kF32;
}

bool isInt8Pair(const MatmulNumerics& numerics) {
  return numerics.lhs_dtype == DType::kInt8 && numerics.rhs_dtype == DType::kInt8;
}

void checkShapes(size_t lhs_size, size_t rhs_size, size_t out_size, uint64_t m, uint64_t k, uint64_t n) {
  if (m == 0 || k == 0 || n == 0) {
    throw Error(ErrorKind::kInvalidInput, "MXU matmul needs positive dimensions, got m=" + std::to_string(m) +
                                              " k=" + std::to_string(k) + " n=" + std::to_string(n));
  }
  // Dividing back instead of multiplying: a product that wrapped would pass.
  const auto holds = [](size_t size, uint64_t rows, uint64_t cols) { return size / rows == cols && size % rows == 0; };
  if (!holds(lhs_size, m, k) || !holds(rhs_size, k, n) || !holds(out_size, m, n)) {
    throw Error(ErrorKind::kInternal, "MXU matmul spans of " + std::to_string(lhs_size) + ", " +
                                          std::to_string(rhs_size) + " and " + std::to_string(out_size) +
                                          " values do not fit m=" + std::to_string(m) + " k=" + std::to_string(k) +
                                          " n=" + std::to_string(n));
  }
}

// One operand as the values each pass multiplies: parts[p] is the whole
// matrix of part p (only hi for bf16 and f16, rounded to the dtype).
struct Operand {
  std::vector<float> parts[3];
};

Operand prepareOperand(DType dtype, std::span<const float> values, int passes) {
  Operand operand;
  if (dtype != DType::kF32) {
    operand.parts[0].assign(values.begin(), values.end());
    roundInPlace(dtype, operand.parts[0]);
    return operand;
  }
  const int used = passes == 1 ? 1 : passes == 3 ? 2 : 3;  // DEFAULT needs hi, HIGH hi and mid
  for (int p = 0; p < used; ++p) operand.parts[p].resize(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const Bf16Parts parts = splitToBf16(values[i]);
    operand.parts[0][i] = parts.hi;
    if (used > 1) operand.parts[1][i] = parts.mid;
    if (used > 2) operand.parts[2][i] = parts.lo;
  }
  return operand;
}

}  // namespace

Bf16Parts splitToBf16(float value) {
  const float hi = roundTo(DType::kBF16, value);
  const float rest = value - hi;
  const float mid = roundTo(DType::kBF16, rest);
  const float lo = roundTo(DType::kBF16, rest - mid);
  return {hi, mid, lo};
}

std::span<const MatmulPass> matmulPassOrder(const MatmulNumerics& numerics) {
  if (!isF32Pair(numerics)) return kOnePass;
  switch (numerics.precision) {
    case MatmulPrecision::kDefault: return kOnePass;
    case MatmulPrecision::kHigh: return kThreePasses;
    case MatmulPrecision::kHighest: return kSixPasses;
  }
  return kOnePass;
}

int matmulPasses(const MatmulNumerics& numerics) {
  return static_cast<int>(matmulPassOrder(numerics).size());
}

DType accumulateDType(const MatmulNumerics& numerics) {
  return isInt8Pair(numerics) ? DType::kInt32 : DType::kF32;
}

void checkMatmulNumerics(const MatmulNumerics& numerics) {
  const DType lhs = numerics.lhs_dtype;
  const DType rhs = numerics.rhs_dtype;
  const bool supported =
      lhs == rhs && (lhs == DType::kBF16 || lhs == DType::kF16 || lhs == DType::kInt8 || lhs == DType::kF32);
  if (!supported) {
    throw Error(ErrorKind::kUnsupported, std::string("unsupported MXU dtype pair ") + dtypeName(lhs) + " x " +
                                             dtypeName(rhs) +
                                             " (supported: bf16 x bf16, f16 x f16, int8 x int8, f32 x f32)");
  }
  if (numerics.rows == 0) throw Error(ErrorKind::kInvalidConfig, "MXU array rows must be at least 1, got 0");
}

void mxuMatmul(const MatmulNumerics& numerics, std::span<const float> lhs, std::span<const float> rhs,
               std::span<float> out, uint64_t m, uint64_t k, uint64_t n) {
  checkMatmulNumerics(numerics);
  if (isInt8Pair(numerics)) {
    throw Error(ErrorKind::kInternal, "int8 x int8 MXU matmul accumulates in int32: use the int32 mxuMatmul");
  }
  checkShapes(lhs.size(), rhs.size(), out.size(), m, k, n);
  const std::span<const MatmulPass> passes = matmulPassOrder(numerics);
  const int pass_count = static_cast<int>(passes.size());
  const Operand a = prepareOperand(numerics.lhs_dtype, lhs, pass_count);
  const Operand b = prepareOperand(numerics.rhs_dtype, rhs, pass_count);
  // Output-stationary sums all of K in the PE: one block.
  const uint64_t block = numerics.dataflow == Dataflow::kOutputStationary ? k : numerics.rows;

  // Row by row, with the inner loop over n: each output element still sees
  // its products in the contract's order, and the compiler vectorizes over n.
  std::vector<float> acc(n);
  std::vector<float> sum(n);
  for (uint64_t i = 0; i < m; ++i) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (const MatmulPass& pass : passes) {
      const float* a_row = a.parts[static_cast<int>(pass.lhs)].data() + i * k;
      const float* b_part = b.parts[static_cast<int>(pass.rhs)].data();
      for (uint64_t k0 = 0; k0 < k; k0 += block) {
        const uint64_t k1 = std::min(k, k0 + block);
        std::fill(sum.begin(), sum.end(), 0.0f);
        for (uint64_t kk = k0; kk < k1; ++kk) {
          const float av = a_row[kk];
          const float* b_row = b_part + kk * n;
          for (uint64_t j = 0; j < n; ++j) sum[j] = sum[j] + av * b_row[j];
        }
        for (uint64_t j = 0; j < n; ++j) acc[j] = acc[j] + sum[j];
      }
    }
    std::copy(acc.begin(), acc.end(), out.begin() + static_cast<std::ptrdiff_t>(i * n));
  }
}

void mxuMatmul(const MatmulNumerics& numerics, std::span<const float> lhs, std::span<const float> rhs,
               std::span<int32_t> out, uint64_t m, uint64_t k, uint64_t n) {
  // The byte overload checks the numerics and the sizes.
  std::vector<int8_t> a(lhs.size());
  std::vector<int8_t> b(rhs.size());
  for (size_t i = 0; i < lhs.size(); ++i) a[i] = floatToInt8(lhs[i]);
  for (size_t i = 0; i < rhs.size(); ++i) b[i] = floatToInt8(rhs[i]);
  mxuMatmul(numerics, std::span<const int8_t>(a), std::span<const int8_t>(b), out, m, k, n);
}

void mxuMatmul(const MatmulNumerics& numerics, std::span<const int8_t> lhs, std::span<const int8_t> rhs,
               std::span<int32_t> out, uint64_t m, uint64_t k, uint64_t n) {
  checkMatmulNumerics(numerics);
  if (!isInt8Pair(numerics)) {
    throw Error(ErrorKind::kInternal, std::string("the int32 mxuMatmul takes int8 x int8 only, got ") +
                                          dtypeName(numerics.lhs_dtype) + " x " + dtypeName(numerics.rhs_dtype));
  }
  checkShapes(lhs.size(), rhs.size(), out.size(), m, k, n);
  // In uint32, where overflow wraps by definition (signed overflow is UB);
  // a product of two int8 values always fits int32.
  std::vector<uint32_t> acc(n);
  for (uint64_t i = 0; i < m; ++i) {
    std::fill(acc.begin(), acc.end(), 0u);
    for (uint64_t kk = 0; kk < k; ++kk) {
      const int32_t av = lhs[i * k + kk];
      const int8_t* b_row = rhs.data() + kk * n;
      for (uint64_t j = 0; j < n; ++j) acc[j] += static_cast<uint32_t>(av * int32_t{b_row[j]});
    }
    for (uint64_t j = 0; j < n; ++j) out[i * n + j] = static_cast<int32_t>(acc[j]);  // modular since C++20
  }
}

}  // namespace tpusim::numerics
