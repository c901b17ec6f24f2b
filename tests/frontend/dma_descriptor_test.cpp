// The lowering's DMA descriptors: HBM addresses from the buffer's offset and the tile's
// position, and one strided descriptor per column block of a row-major matrix.
#include <gtest/gtest.h>

#include "frontend/lower/lower.hpp"
#include "traces/program_format.hpp"

namespace tpusim {
namespace {

program::Program lowerOne(ir::Graph& g) {
  HardwareParams hw = HardwareParams::load("tpuv4");
  hw.set("chip.tensor_cores", "1");
  return lowerToProgram(g, hw, LowerOptions{"test", "inference", 1});
}

uint64_t field(const std::string& text, const std::string& name) {
  const size_t at = text.find(name + "=");
  return at == std::string::npos ? 0 : std::stoull(text.substr(at + name.size() + 1));
}

const program::Buffer& hbmSide(const program::ChipProgram& chip, const program::Instruction& ins) {
  const bool load = ins.dma().src() == program::HBM;
  return chip.buffers(static_cast<int>(load ? ins.reads(0) : ins.writes(0)));
}

// Every descriptor lies in its buffer.
void expectInsideBuffers(const program::ChipProgram& chip) {
  for (const program::Instruction& ins : chip.instructions()) {
    if (!ins.has_dma()) continue;
    const program::DmaTransfer& d = ins.dma();
    const program::Buffer& buffer = hbmSide(chip, ins);
    const uint64_t end =
        d.rows() > 1 ? d.hbm_address() + (d.rows() - 1) * d.row_stride() + d.row_bytes() : d.hbm_address() + d.bytes();
    EXPECT_GE(d.hbm_address(), buffer.offset()) << instructionName(ins);
    EXPECT_LE(end, buffer.offset() + buffer.bytes()) << instructionName(ins);
  }
}

TEST(DmaDescriptors, ColumnBlocksOfTheWeightAreStrided) {
  // y[8192, 4096] = x[8192, 1024] x w[1024, 4096] in f32: 16 MiB of w does not fit VMEM with
  // the rest, so w stays resident in column blocks of n_block and x streams in m_tile rows.
  ir::Graph g;
  const int x = g.addInput("x", {8192, 1024}, DType::kF32, ir::TensorRole::kInput);
  const int w = g.addWeight("w", {1024, 4096}, DType::kF32);
  g.markOutput(g.matmul("mm", x, w, false, false));
  const program::Program program = lowerOne(g);
  const program::ChipProgram& chip = program.chips(0);
  const std::string& tiling = chip.ops(0).tiling();
  ASSERT_NE(tiling.find("rhs_resident"), std::string::npos) << tiling;
  const uint64_t n_block = field(tiling, "n_block"), m_tile = field(tiling, "m_tile");
  ASSERT_LT(n_block, 4096u) << tiling;
  int blocks = 0, lhs_tiles = 0, stores = 0;
  uint64_t stored = 0;
  for (const program::Instruction& ins : chip.instructions()) {
    if (!ins.has_dma()) continue;
    const program::DmaTransfer& d = ins.dma();
    const uint64_t base = hbmSide(chip, ins).offset();
    if (instructionName(ins).find("load.rhs.n") != std::string::npos) {
      // Block b: 1024 rows of n_block f32 from column b * n_block, one w row (16 KiB) apart.
      EXPECT_EQ(d.hbm_address(), base + static_cast<uint64_t>(blocks) * n_block * 4) << instructionName(ins);
      EXPECT_EQ(d.rows(), 1024u);
      EXPECT_EQ(d.row_bytes(), n_block * 4);
      EXPECT_EQ(d.row_stride(), 4096u * 4);
      EXPECT_EQ(d.bytes(), 1024 * n_block * 4);
      ++blocks;
    } else if (instructionName(ins).find("load.lhs.m") != std::string::npos) {
      EXPECT_EQ(d.rows(), 0u) << instructionName(ins);  // whole rows of x: contiguous
      EXPECT_EQ((d.hbm_address() - base) % (m_tile * 1024 * 4), 0u) << instructionName(ins);
      ++lhs_tiles;
    } else if (ins.dma().dst() == program::HBM) {
      // A y tile: up to m_tile rows of n_block f32, one y row apart.
      EXPECT_LE(d.rows(), m_tile) << instructionName(ins);
      EXPECT_EQ(d.row_bytes(), n_block * 4);
      EXPECT_EQ(d.row_stride(), 4096u * 4);
      stored += d.bytes();
      ++stores;
    }
  }
  EXPECT_EQ(static_cast<uint64_t>(blocks), 4096 / n_block);
  EXPECT_EQ(static_cast<uint64_t>(lhs_tiles), 4096 / n_block * ((8192 + m_tile - 1) / m_tile));
  EXPECT_EQ(stores, lhs_tiles);
  EXPECT_EQ(stored, 8192u * 4096 * 4);
  expectInsideBuffers(chip);
}

TEST(DmaDescriptors, TilesOfAStreamedTensorFollowEachOther) {
  ir::Graph g;
  const int x = g.addInput("x", {64 * 1024 * 1024}, DType::kF32, ir::TensorRole::kInput);  // 256 MiB
  g.markOutput(g.relu("relu", x));
  const program::Program program = lowerOne(g);
  const program::ChipProgram& chip = program.chips(0);
  uint64_t next_load = 0, next_store = 0;
  for (const program::Instruction& ins : chip.instructions()) {
    if (!ins.has_dma()) continue;
    const program::DmaTransfer& d = ins.dma();
    const uint64_t at = d.hbm_address() - hbmSide(chip, ins).offset();
    uint64_t& next = d.src() == program::HBM ? next_load : next_store;
    EXPECT_EQ(at, next) << instructionName(ins);
    next = at + d.bytes();
  }
  EXPECT_EQ(next_load, 256u * 1024 * 1024);
  EXPECT_EQ(next_store, 256u * 1024 * 1024);
  expectInsideBuffers(chip);
}

TEST(DmaDescriptors, GatherRowsAreSpreadOverTheTable) {
  ir::Graph g;
  const int table = g.addWeight("table", {1000, 64}, DType::kF32);
  const int ids = g.addInput("ids", {4, 8}, DType::kInt64, ir::TensorRole::kInput);
  g.markOutput(g.gather("gather", table, ids, 0));
  const program::Program program = lowerOne(g);
  const program::ChipProgram& chip = program.chips(0);
  bool found = false;
  for (const program::Instruction& ins : chip.instructions()) {
    if (instructionName(ins).find("load.rows") == std::string::npos) continue;
    found = true;
    // 32 rows of 256 B from 256,000 B: (256,000 - 256) / 31 = 8,249 B apart.
    EXPECT_EQ(ins.dma().rows(), 32u);
    EXPECT_EQ(ins.dma().row_bytes(), 256u);
    EXPECT_EQ(ins.dma().row_stride(), 8249u);
  }
  EXPECT_TRUE(found);
  expectInsideBuffers(chip);
}

}  // namespace
}  // namespace tpusim
