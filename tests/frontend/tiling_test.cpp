// Tile-size choice against closed forms: what fits VMEM, and the HBM bytes each blocking moves.
#include "frontend/lower/tiling.hpp"

#include <random>

#include <gtest/gtest.h>

#include "sim/common/error.hpp"

namespace tpusim {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

TEST(GemmTiling, WholeWhenEverythingFits) {
  const GemmTiling t = chooseGemmTiling({256, 512, 128, 4, 4, 4}, 16 * kMiB, 128);
  EXPECT_EQ(t.blocking, GemmBlocking::kWhole);
  EXPECT_EQ(t.hbm_bytes, (256u * 512 + 512 * 128 + 256 * 128) * 4);
}

TEST(GemmTiling, SmallRhsStaysResidentAndLhsStreamsOnce) {
  // ResNet-50's first convolution on one core at batch 128: 802816 rows, k = 147, n = 64.
  const GemmShape shape{802816, 147, 64, 4, 4, 4};
  const GemmTiling t = chooseGemmTiling(shape, 16 * kMiB, 128);
  EXPECT_EQ(t.blocking, GemmBlocking::kRhsResident);
  EXPECT_EQ(t.n_block, 64u);
  // Each streamed row holds k lhs and n out elements, double-buffered next to the resident rhs:
  // m_tile = floor((16 MiB - 147*64*4) / (2 * (147 + 64) * 4) / 128) * 128.
  const uint64_t room = 16 * kMiB - 147 * 64 * 4;
  EXPECT_EQ(t.m_tile, room / (2 * (147 + 64) * 4) / 128 * 128);
  EXPECT_EQ(t.hbm_bytes, (802816u * 147 + 147 * 64 + 802816 * 64) * 4);  // every operand once
  EXPECT_LE(t.vmem_bytes, 16 * kMiB);
}

TEST(GemmTiling, LargeRhsIsTakenInColumnBlocksOrTheLhsStaysInstead) {
  // A 30522-word output layer: rhs [768, 30522] is 89 MiB; lhs [512, 768] is 1.5 MiB.
  const GemmTiling t = chooseGemmTiling({512, 768, 30522, 4, 4, 4}, 16 * kMiB, 128);
  EXPECT_EQ(t.blocking, GemmBlocking::kLhsResident);  // the small lhs stays, the rhs streams once
  EXPECT_EQ(t.m_tile, 512u);
  EXPECT_EQ(t.hbm_bytes, (512u * 768 + 768 * 30522 + 512 * 30522) * 4);
}

TEST(GemmTiling, HugeContractionAccumulatesInVmem) {
  // A weight gradient: m = 256 channels, k = 128 x 56 x 56 pixels, n = 64 x 9.
  const GemmShape shape{256, 401408, 576, 4, 4, 4};
  const GemmTiling t = chooseGemmTiling(shape, 16 * kMiB, 128);
  EXPECT_EQ(t.blocking, GemmBlocking::kKSplit);
  EXPECT_LT(t.k_tile, shape.k);
  EXPECT_EQ(t.k_tile % 128, 0u);
  EXPECT_LE(t.vmem_bytes, 16 * kMiB);
  const uint64_t lhs = 256u * 401408 * 4, rhs = 401408u * 576 * 4, out = 256u * 576 * 4;
  const uint64_t m_blocks = (256 + t.m_tile - 1) / t.m_tile, n_blocks = (576 + t.n_block - 1) / t.n_block;
  EXPECT_EQ(t.hbm_bytes, n_blocks * lhs + m_blocks * rhs + out);
}

TEST(GemmTiling, EveryChoiceFitsAndMovesAtLeastEachOperandOnce) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 500; ++i) {
    const GemmShape shape{1 + rng() % 20000, 1 + rng() % 20000, 1 + rng() % 20000, 4, 4, 4};
    const uint64_t vmem = (1 + rng() % 32) * kMiB;
    const GemmTiling t = chooseGemmTiling(shape, vmem, 128);
    EXPECT_LE(t.vmem_bytes, vmem) << shape.m << "x" << shape.k << "x" << shape.n;
    EXPECT_GE(t.hbm_bytes, (shape.m * shape.k + shape.k * shape.n + shape.m * shape.n) * 4);
    EXPECT_GE(t.m_tile, 1u);
    EXPECT_GE(t.n_block, 1u);
    EXPECT_GE(t.k_tile, 1u);
  }
}

TEST(GemmTiling, NoTilingInATinyVmemIsAClearError) {
  try {
    chooseGemmTiling({4096, 4096, 4096, 4, 4, 4}, 1024, 128);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kResource);
    EXPECT_NE(std::string(error.what()).find("no tiling that fits"), std::string::npos) << error.what();
  }
}

TEST(MxuSplit, ALongNarrowWeightGradientSplitsItsDepthWhereAllowed) {
  // A 128 x 4096 x 64 tile on four 128 x 128 weight-stationary MXUs (docs/mxu.md closed forms).
  GemmCostModel model;
  model.mxus = 4;
  // Rows: 32 rows per MXU under 32 weight tiles, each fold waiting 128 cycles for its load:
  // 128 + 31 x 128 + (31 + 128 + 64 - 1) = 4318 (columns, 16 each, take 4366).
  const MxuSplit whole_k = chooseMxuSplit(128, 4096, 64, model);
  EXPECT_EQ(whole_k.axis, MxuSplitAxis::kRows);
  EXPECT_EQ(whole_k.cycles, 4318u);
  // Depth: 1024 of K per MXU, 8 folds of 128 rows, 128 + 7 x 128 + (127 + 128 + 64 - 1) = 1342,
  // and the vector unit's adds of the other three shares, 128 x 64 x 3 / 1024 = 24.
  model.split_depth = true;
  const MxuSplit split = chooseMxuSplit(128, 4096, 64, model);
  EXPECT_EQ(split.axis, MxuSplitAxis::kDepth);
  EXPECT_EQ(split.pieces, 4u);
  EXPECT_EQ(split.cycles, 1342u + 24u);
  // K of one array's rows stays whole: a share would waste rows.
  EXPECT_NE(chooseMxuSplit(128, 128, 64, model).axis, MxuSplitAxis::kDepth);
}

TEST(RowTiling, HalfOfWhatIsLeftWhenRowsStream) {
  EXPECT_EQ(rowsPerTile(100, 10, 0, 1000, "op"), 100u);        // all at once
  EXPECT_EQ(rowsPerTile(1000, 10, 200, 1000, "op"), 40u);      // (1000 - 200) / (2 * 10)
  EXPECT_THROW(rowsPerTile(1000, 600, 0, 1000, "op"), Error);  // not even one row, twice
}

}  // namespace
}  // namespace tpusim
