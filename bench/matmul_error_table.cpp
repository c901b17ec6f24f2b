// Prints, as Markdown, how far each MXU input mode lands from the exact
// product (docs/mxu-numerics.md holds its output). The inputs are f32,
// uniform in [-1, 1] from a fixed seed; the exact product is fp64 of those
// f32 values; each mode rounds them its own way and multiplies with
// sim/common/matmul_numerics. The error is normwise:
//   e[m,n] = |out[m,n] - exact[m,n]| / max over all (m,n) of |exact[m,n]|,
// reported as its max and mean over the output. Deterministic: the values
// come from std::mt19937's raw bits, not a library-defined distribution.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "sim/common/matmul_numerics.hpp"
#include "sim/common/numerics.hpp"

namespace {

using tpusim::DType;
using namespace tpusim::numerics;

constexpr uint64_t kM = 256;
constexpr uint64_t kN = 256;
constexpr uint64_t kDepths[] = {128, 1024, 4096};

enum class Mode { kBf16, kF16, kF32Default, kF32High, kF32Highest, kInt8 };
constexpr Mode kModes[] = {Mode::kBf16, Mode::kF16, Mode::kF32Default, Mode::kF32High, Mode::kF32Highest, Mode::kInt8};

const char* modeName(Mode mode) {
  switch (mode) {
    case Mode::kBf16: return "bf16 inputs";
    case Mode::kF16: return "f16 inputs";
    case Mode::kF32Default: return "f32, DEFAULT (1 pass)";
    case Mode::kF32High: return "f32, HIGH (3 passes)";
    case Mode::kF32Highest: return "f32, HIGHEST (6 passes)";
    case Mode::kInt8: return "int8, per-tensor scale";
  }
  return "?";
}

// Uniform in [-1, 1) on a 2^-23 grid: every value is an exact float.
std::vector<float> uniformValues(std::mt19937& rng, uint64_t count) {
  std::vector<float> values(count);
  for (float& value : values) value = std::ldexp(static_cast<float>(rng() >> 8), -23) - 1.0f;
  return values;
}

std::vector<double> exactProduct(const std::vector<float>& lhs, const std::vector<float>& rhs, uint64_t k) {
  std::vector<double> out(kM * kN, 0.0);
  for (uint64_t i = 0; i < kM; ++i) {
    for (uint64_t kk = 0; kk < k; ++kk) {
      const double a = lhs[i * k + kk];
      for (uint64_t j = 0; j < kN; ++j) out[i * kN + j] += a * static_cast<double>(rhs[kk * kN + j]);
    }
  }
  return out;
}

// int8 with a symmetric per-tensor scale: q = int8(x * 127 / max|x|), and the
// int32 product divided back by both scales.
std::vector<double> int8Product(const MatmulNumerics& base, const std::vector<float>& lhs,
                                const std::vector<float>& rhs, uint64_t k) {
  const auto scaled = [](const std::vector<float>& values, double& scale) {
    float max_abs = 0.0f;
    for (float value : values) max_abs = std::max(max_abs, std::abs(value));
    scale = 127.0 / max_abs;
    std::vector<float> out(values.size());
    for (size_t i = 0; i < values.size(); ++i) out[i] = static_cast<float>(values[i] * scale);
    return out;
  };
  double lhs_scale = 0.0;
  double rhs_scale = 0.0;
  const std::vector<float> q_lhs = scaled(lhs, lhs_scale);
  const std::vector<float> q_rhs = scaled(rhs, rhs_scale);
  MatmulNumerics numerics = base;
  numerics.lhs_dtype = numerics.rhs_dtype = DType::kInt8;
  std::vector<int32_t> acc(kM * kN);
  mxuMatmul(numerics, q_lhs, q_rhs, std::span<int32_t>(acc), kM, k, kN);
  std::vector<double> out(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) out[i] = acc[i] / (lhs_scale * rhs_scale);
  return out;
}

std::vector<double> modeProduct(Mode mode, Dataflow dataflow, const std::vector<float>& lhs,
                                const std::vector<float>& rhs, uint64_t k) {
  MatmulNumerics numerics;
  numerics.dataflow = dataflow;
  numerics.rows = 128;
  if (mode == Mode::kInt8) return int8Product(numerics, lhs, rhs, k);
  const DType dtype = mode == Mode::kBf16 ? DType::kBF16 : mode == Mode::kF16 ? DType::kF16 : DType::kF32;
  numerics.lhs_dtype = numerics.rhs_dtype = dtype;
  if (mode == Mode::kF32High) numerics.precision = MatmulPrecision::kHigh;
  if (mode == Mode::kF32Highest) numerics.precision = MatmulPrecision::kHighest;
  std::vector<float> out(kM * kN);
  mxuMatmul(numerics, lhs, rhs, out, kM, k, kN);
  return std::vector<double>(out.begin(), out.end());
}

struct ErrorStats {
  double max = 0.0;
  double mean = 0.0;
};

ErrorStats normwiseError(const std::vector<double>& out, const std::vector<double>& exact) {
  double scale = 0.0;
  for (double value : exact) scale = std::max(scale, std::abs(value));
  ErrorStats stats;
  for (size_t i = 0; i < out.size(); ++i) {
    const double error = std::abs(out[i] - exact[i]) / scale;
    stats.max = std::max(stats.max, error);
    stats.mean += error;
  }
  stats.mean /= static_cast<double>(out.size());
  return stats;
}

void printTable(Dataflow dataflow, const char* title) {
  std::printf("%s, M = N = %llu, inputs uniform in [-1, 1] (mt19937 seed = K):\n\n", title,
              static_cast<unsigned long long>(kM));
  std::string header = "| mode |";
  std::string rule = "|---|";
  for (uint64_t k : kDepths) {
    header += " K=" + std::to_string(k) + " max | K=" + std::to_string(k) + " mean |";
    rule += "---:|---:|";
  }
  std::printf("%s\n%s\n", header.c_str(), rule.c_str());
  ErrorStats stats[std::size(kModes)][std::size(kDepths)];
  for (size_t d = 0; d < std::size(kDepths); ++d) {
    const uint64_t k = kDepths[d];
    std::mt19937 rng(static_cast<uint32_t>(k));
    const std::vector<float> lhs = uniformValues(rng, kM * k);
    const std::vector<float> rhs = uniformValues(rng, k * kN);
    const std::vector<double> exact = exactProduct(lhs, rhs, k);
    for (size_t m = 0; m < std::size(kModes); ++m) {
      stats[m][d] = normwiseError(modeProduct(kModes[m], dataflow, lhs, rhs, k), exact);
    }
  }
  for (size_t m = 0; m < std::size(kModes); ++m) {
    std::printf("| %s |", modeName(kModes[m]));
    for (size_t d = 0; d < std::size(kDepths); ++d) std::printf(" %.2e | %.2e |", stats[m][d].max, stats[m][d].mean);
    std::printf("\n");
  }
  std::printf("\n");
}

}  // namespace

int main() {
  std::printf("Normwise error |out - exact| / max|exact| against fp64 of the f32 inputs.\n\n");
  printTable(Dataflow::kWeightStationary, "Weight-stationary, R = 128");
  printTable(Dataflow::kOutputStationary, "Output-stationary (no K blocks), for comparison");
  return 0;
}
