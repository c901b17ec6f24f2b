// Ops larger than VMEM are tiled: the tiles add up to the op, each fits, and they are double-buffered.
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "frontend/lower/lower.hpp"
#include "frontend/lower/tiling.hpp"

namespace tpusim {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

program::Program lowerOne(ir::Graph& g, const HardwareParams& hw) {
  return lowerToProgram(g, hw, LowerOptions{"test", "inference", 1});
}

HardwareParams oneCore() {
  HardwareParams hw = HardwareParams::load("tpuv4");
  hw.set("chip.tensor_cores", "1");
  return hw;
}

TEST(TiledLowering, MatMulTilesSumToTheProductAndEachFitsVmem) {
  ir::Graph g;
  const int x = g.addInput("x", {65536, 1024}, DType::kF32, ir::TensorRole::kInput);
  const int w = g.addWeight("w", {1024, 512}, DType::kF32);
  g.markOutput(g.matmul("mm", x, w, false, false));
  const HardwareParams hw = oneCore();
  const program::Program program = lowerOne(g, hw);
  const program::ChipProgram& chip = program.chips(0);
  uint64_t flops = 0, loaded = 0, stored = 0, vmem = 0;
  for (const auto& ins : chip.instructions()) {
    if (ins.has_matmul()) flops += ins.flops();
    if (ins.has_dma()) (ins.dma().dst() == program::VMEM ? loaded : stored) += ins.dma().bytes();
  }
  for (const auto& buffer : chip.buffers()) {
    if (buffer.space() == program::VMEM) vmem += buffer.bytes();
  }
  EXPECT_EQ(flops, 2ull * 65536 * 1024 * 512);
  const GemmTiling tiling = chooseGemmTiling({65536, 1024, 512, 4, 4, 4}, 16 * kMiB, 128);
  EXPECT_EQ(tiling.blocking, GemmBlocking::kRhsResident);
  EXPECT_EQ(loaded + stored, tiling.hbm_bytes);  // x and w once, y once
  EXPECT_EQ(stored, 65536ull * 512 * 4);
  EXPECT_LE(vmem, 16 * kMiB);  // two lhs and two out slots, and the resident rhs
  ASSERT_EQ(chip.ops_size(), 1);
  EXPECT_EQ(chip.ops(0).tiles(), (65536 + tiling.m_tile - 1) / tiling.m_tile);
  EXPECT_NE(chip.ops(0).tiling().find("rhs_resident"), std::string::npos);
}

TEST(TiledLowering, StreamedTilesAreDoubleBuffered) {
  ir::Graph g;
  const int x = g.addInput("x", {64 * 1024 * 1024}, DType::kF32, ir::TensorRole::kInput);  // 256 MiB
  g.markOutput(g.relu("relu", x));
  const program::Program program = lowerOne(g, oneCore());
  const program::ChipProgram& chip = program.chips(0);
  std::vector<const program::Instruction*> loads, vpus, stores;
  for (const auto& ins : chip.instructions()) {
    if (ins.has_vector()) vpus.push_back(&ins);
    if (ins.has_dma()) (ins.dma().dst() == program::VMEM ? loads : stores).push_back(&ins);
  }
  // 256 MiB in and out through 16 MiB: tiles of 2 MiB of input and 2 MiB of output, double-buffered.
  EXPECT_EQ(loads.size(), 64u);
  ASSERT_EQ(vpus.size(), loads.size());
  ASSERT_EQ(stores.size(), loads.size());
  for (size_t t = 2; t < loads.size(); ++t) {
    const std::set<uint32_t> load_deps(loads[t]->deps().begin(), loads[t]->deps().end());
    const std::set<uint32_t> vpu_deps(vpus[t]->deps().begin(), vpus[t]->deps().end());
    EXPECT_TRUE(load_deps.count(vpus[t - 2]->id())) << "tile " << t << " overwrites a slot still being read";
    EXPECT_TRUE(vpu_deps.count(stores[t - 2]->id())) << "tile " << t << " overwrites a slot still being stored";
    EXPECT_FALSE(load_deps.count(vpus[t - 1]->id())) << "tile " << t << " waits for the other slot";
  }
}

TEST(TiledLowering, ConsumersWaitOnlyForTheTilesTheyRead) {
  ir::Graph g;
  const int x = g.addInput("x", {64 * 1024 * 1024}, DType::kF32, ir::TensorRole::kInput);
  g.markOutput(g.relu("second", g.relu("first", x)));
  const program::Program program = lowerOne(g, oneCore());
  std::map<uint32_t, const program::Instruction*> by_id;
  for (const auto& ins : program.chips(0).instructions()) by_id[ins.id()] = &ins;
  for (const auto& ins : program.chips(0).instructions()) {
    if (ins.op() != "second" || !ins.has_dma() || ins.dma().dst() != program::VMEM) continue;
    int producer_stores = 0;
    for (uint32_t dep : ins.deps()) producer_stores += by_id[dep]->op() == "first" ? 1 : 0;
    EXPECT_EQ(producer_stores, 1) << ins.name();  // the one store of the same rows
  }
}

TEST(TiledLowering, ReductionOverTheBatchAccumulatesAndCombinesCores) {
  ir::Graph g;
  const int x = g.addInput("x", {4096, 4096}, DType::kF32, ir::TensorRole::kInput);  // 64 MiB
  g.markOutput(g.reduce("sum", x, ir::Reduction::kSum, {0}, true));
  const program::Program program = lowerOne(g, HardwareParams::load("tpuv4"));
  const program::ChipProgram& chip = program.chips(0);
  uint64_t elements = 0, loaded = 0;
  int combines = 0;
  for (const auto& ins : chip.instructions()) {
    if (ins.has_vector() && ins.vector().kind() == program::REDUCTION) elements += ins.vector().elements();
    if (ins.has_vector() && ins.name().find("combine") != std::string::npos) ++combines;
    if (ins.has_dma() && ins.dma().dst() == program::VMEM && ins.reads(0) == 0) loaded += ins.dma().bytes();
  }
  EXPECT_EQ(elements, 4096u * 4096);
  EXPECT_EQ(loaded, 4096u * 4096 * 4);
  EXPECT_EQ(combines, 1);
  EXPECT_EQ(chip.memory().scratch_bytes(), 2u * 4096 * 4);  // one partial row per core
}

}  // namespace
}  // namespace tpusim
