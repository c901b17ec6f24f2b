// Compiled with -ffp-contract=off (sim/CMakeLists.txt): a fused multiply-add
// would skip the product's rounding and change the bits the contract fixes.
#include "sim/common/matmul_numerics.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/common/numerics.hpp"
#include "sim/common/parallel_rows.hpp"

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
  // An f32 operand's hi part is its bf16 rounding: DEFAULT needs no more.
  if (dtype != DType::kF32 || passes == 1) {
    operand.parts[0].assign(values.begin(), values.end());
    roundInPlace(dtype == DType::kF32 ? DType::kBF16 : dtype, operand.parts[0]);
    return operand;
  }
  const int used = passes == 3 ? 2 : 3;  // HIGH needs hi and mid
  for (int p = 0; p < used; ++p) operand.parts[p].resize(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const Bf16Parts parts = splitToBf16(values[i]);
    operand.parts[0][i] = parts.hi;
    if (used > 1) operand.parts[1][i] = parts.mid;
    if (used > 2) operand.parts[2][i] = parts.lo;
  }
  return operand;
}

// The float products run in tiles of kTileRows x kTileCols outputs held in
// registers (GCC vector extensions; a product and its sum stay two roundings,
// -ffp-contract=off), over a K chunk of at most kChunk and a panel of
// kPanelCols columns of rhs packed tile by tile, so a tile's rhs strip and
// lhs rows stay in the nearest caches. Every output element still sees its
// products, block sums and passes in the contract's order: tiling only
// changes which elements are computed together.
constexpr int kTileRows = 4;
constexpr int kTileCols = 8;
constexpr uint64_t kChunk = 128;
constexpr uint64_t kPanelCols = 512;

// A tile row is kLanes vectors of 16 bytes, the width SSE2 holds in a
// register: GCC splits a wider vector through memory on every add.
typedef float Lane __attribute__((vector_size(16)));
constexpr int kLaneWidth = sizeof(Lane) / sizeof(float);
constexpr int kLanes = kTileCols / kLaneWidth;

Lane loadLane(const float* from) {
  Lane lane;
  std::memcpy(&lane, from, sizeof(lane));
  return lane;
}

void storeLane(float* to, const Lane& lane) {
  std::memcpy(to, &lane, sizeof(lane));
}

// One tile over one K chunk: s = s + a*b for each k in order; a block's
// partial sums s start at zero on its first chunk and are added to the
// accumulator on its last. a holds R rows of lhs (stride lda) from the
// chunk's first k; b the chunk's packed rhs strip, kTileCols values per k;
// s and acc are tiles with rows of stride ld.
template <int R>
void sumTile(const float* a, uint64_t lda, const float* b, uint64_t chunk, float* s, float* acc, uint64_t ld,
             bool first, bool last) {
  Lane sum[R][kLanes] = {};
  if (!first) {
    for (int r = 0; r < R; ++r) {
      for (int l = 0; l < kLanes; ++l) sum[r][l] = loadLane(s + r * ld + l * kLaneWidth);
    }
  }
  for (uint64_t kk = 0; kk < chunk; ++kk) {
    Lane bv[kLanes];
    for (int l = 0; l < kLanes; ++l) bv[l] = loadLane(b + kk * kTileCols + l * kLaneWidth);
    for (int r = 0; r < R; ++r) {
      const float av = a[r * lda + kk];
      for (int l = 0; l < kLanes; ++l) sum[r][l] = sum[r][l] + av * bv[l];
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int l = 0; l < kLanes; ++l) {
      float* at = (last ? acc : s) + r * ld + l * kLaneWidth;
      storeLane(at, last ? loadLane(at) + sum[r][l] : sum[r][l]);
    }
  }
}

void sumRows(int rows, const float* a, uint64_t lda, const float* b, uint64_t chunk, float* s, float* acc, uint64_t ld,
             bool first, bool last) {
  switch (rows) {
    case 1: return sumTile<1>(a, lda, b, chunk, s, acc, ld, first, last);
    case 2: return sumTile<2>(a, lda, b, chunk, s, acc, ld, first, last);
    case 3: return sumTile<3>(a, lda, b, chunk, s, acc, ld, first, last);
    default: return sumTile<kTileRows>(a, lda, b, chunk, s, acc, ld, first, last);
  }
}

// Where a tile's partial sums and accumulator live: the output rows for a
// whole tile, a narrow buffer kTileCols wide for the last, partial one.
struct TileSums {
  float* partial;  // null when every block fits one chunk
  float* acc;
  uint64_t ld;
};

// One pass of out[rows, n] += lhs[rows, k] x rhs[k, n] (out already holds
// the earlier passes), K summed in blocks of `block`; `edge` is the narrow
// accumulator for the columns past the last whole tile.
void tiledPass(const float* lhs, const float* rhs, float* out, float* edge, uint64_t rows, uint64_t k, uint64_t n,
               uint64_t block) {
  const uint64_t width = (n + kTileCols - 1) / kTileCols * kTileCols;
  const uint64_t whole = n / kTileCols * kTileCols;
  const bool chunked = block > kChunk;
  std::vector<float> partial(chunked ? rows * n : 0);
  std::vector<float> edge_partial(chunked ? rows * kTileCols : 0);
  std::vector<float> packed(std::min(kChunk, block) * std::min(width, kPanelCols));
  for (uint64_t b0 = 0; b0 < k; b0 += block) {
    const uint64_t b1 = std::min(k, b0 + block);
    for (uint64_t c0 = b0; c0 < b1; c0 += kChunk) {
      const uint64_t c1 = std::min(b1, c0 + kChunk);
      const uint64_t chunk = c1 - c0;
      for (uint64_t p0 = 0; p0 < width; p0 += kPanelCols) {
        const uint64_t p1 = std::min(width, p0 + kPanelCols);
        // Tile by tile, k by k; columns past n are zeros whose sums are dropped.
        float* to = packed.data();
        for (uint64_t j0 = p0; j0 < p1; j0 += kTileCols) {
          for (uint64_t kk = c0; kk < c1; ++kk) {
            for (uint64_t j = j0; j < j0 + kTileCols; ++j) *to++ = j < n ? rhs[kk * n + j] : 0.0f;
          }
        }
        for (uint64_t i0 = 0; i0 < rows; i0 += kTileRows) {
          const int tile_rows = static_cast<int>(std::min<uint64_t>(kTileRows, rows - i0));
          for (uint64_t j0 = p0; j0 < p1; j0 += kTileCols) {
            const TileSums sums = j0 < whole
                                      ? TileSums{chunked ? partial.data() + i0 * n + j0 : nullptr, out + i0 * n + j0, n}
                                      : TileSums{chunked ? edge_partial.data() + i0 * kTileCols : nullptr,
                                                 edge + i0 * kTileCols, kTileCols};
            sumRows(tile_rows, lhs + i0 * k + c0, k, packed.data() + (j0 - p0) * chunk, chunk, sums.partial, sums.acc,
                    sums.ld, c0 == b0, c1 == b1);
          }
        }
      }
    }
  }
}

// Rows [begin, end) of out[m, n] over the passes: lhs_parts[p] and
// rhs_parts[p] are pass p's operands, all passes adding into one accumulator.
void tiledMatmul(std::span<const float* const> lhs_parts, std::span<const float* const> rhs_parts, float* out,
                 uint64_t begin, uint64_t end, uint64_t k, uint64_t n, uint64_t block) {
  const uint64_t rows = end - begin;
  const uint64_t whole = n / kTileCols * kTileCols;
  float* rows_out = out + begin * n;
  std::fill_n(rows_out, rows * n, 0.0f);
  std::vector<float> edge(whole < n ? rows * kTileCols : 0);
  for (size_t p = 0; p < lhs_parts.size(); ++p) {
    tiledPass(lhs_parts[p] + begin * k, rhs_parts[p], rows_out, edge.data(), rows, k, n, block);
  }
  for (uint64_t i = 0; i < rows && whole < n; ++i) {
    std::copy_n(edge.begin() + static_cast<std::ptrdiff_t>(i * kTileCols), n - whole, rows_out + i * n + whole);
  }
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
               std::span<float> out, uint64_t m, uint64_t k, uint64_t n, int threads) {
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
  std::vector<const float*> lhs_parts;
  std::vector<const float*> rhs_parts;
  for (const MatmulPass& pass : passes) {
    lhs_parts.push_back(a.parts[static_cast<int>(pass.lhs)].data());
    rhs_parts.push_back(b.parts[static_cast<int>(pass.rhs)].data());
  }
  parallelRows(static_cast<int64_t>(m), threads, [&](int64_t begin, int64_t end) {
    tiledMatmul(lhs_parts, rhs_parts, out.data(), static_cast<uint64_t>(begin), static_cast<uint64_t>(end), k, n,
                block);
  });
}

void mxuMatmul(const MatmulNumerics& numerics, std::span<const float> lhs, std::span<const float> rhs,
               std::span<int32_t> out, uint64_t m, uint64_t k, uint64_t n, int threads) {
  // The byte overload checks the numerics and the sizes.
  std::vector<int8_t> a(lhs.size());
  std::vector<int8_t> b(rhs.size());
  for (size_t i = 0; i < lhs.size(); ++i) a[i] = floatToInt8(lhs[i]);
  for (size_t i = 0; i < rhs.size(); ++i) b[i] = floatToInt8(rhs[i]);
  mxuMatmul(numerics, std::span<const int8_t>(a), std::span<const int8_t>(b), out, m, k, n, threads);
}

void mxuMatmul(const MatmulNumerics& numerics, std::span<const int8_t> lhs, std::span<const int8_t> rhs,
               std::span<int32_t> out, uint64_t m, uint64_t k, uint64_t n, int threads) {
  checkMatmulNumerics(numerics);
  if (!isInt8Pair(numerics)) {
    throw Error(ErrorKind::kInternal, std::string("the int32 mxuMatmul takes int8 x int8 only, got ") +
                                          dtypeName(numerics.lhs_dtype) + " x " + dtypeName(numerics.rhs_dtype));
  }
  checkShapes(lhs.size(), rhs.size(), out.size(), m, k, n);
  // In uint32, where overflow wraps by definition (signed overflow is UB);
  // a product of two int8 values always fits int32. Exact sums are
  // order-free, so a row at a time, the rows split between the threads.
  parallelRows(static_cast<int64_t>(m), threads, [=](int64_t begin, int64_t end) {
    std::vector<uint32_t> acc_row(n);
    uint32_t* acc = acc_row.data();
    for (auto i = static_cast<uint64_t>(begin); i < static_cast<uint64_t>(end); ++i) {
      std::fill_n(acc, n, 0u);
      for (uint64_t kk = 0; kk < k; ++kk) {
        const int32_t av = lhs[i * k + kk];
        const int8_t* b_row = rhs.data() + kk * n;
        for (uint64_t j = 0; j < n; ++j) acc[j] += static_cast<uint32_t>(av * int32_t{b_row[j]});
      }
      for (uint64_t j = 0; j < n; ++j) out[i * n + j] = static_cast<int32_t>(acc[j]);  // modular since C++20
    }
  });
}

}  // namespace tpusim::numerics
