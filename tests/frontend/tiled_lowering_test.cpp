// Ops larger than VMEM are tiled: the tiles add up to the op, each fits, and they are double-buffered.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "frontend/compile.hpp"
#include "frontend/import/onnx_import.hpp"
#include "frontend/lower/lower.hpp"
#include "frontend/lower/tiling.hpp"
#include "frontend/train/training_graph.hpp"
#include "traces/program_format.hpp"

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

// The loads of a 256 MiB relu with tiles of at most `stream_tile_kib` (0: VMEM's half).
std::vector<const program::Instruction*> reluLoads(const char* stream_tile_kib, program::Program& program) {
  ir::Graph g;
  const int x = g.addInput("x", {64 * 1024 * 1024}, DType::kF32, ir::TensorRole::kInput);  // 256 MiB
  g.markOutput(g.relu("relu", x));
  HardwareParams hw = oneCore();
  hw.set("vmem.stream_tile_kib", stream_tile_kib);
  program = lowerOne(g, hw);
  std::vector<const program::Instruction*> loads;
  for (const auto& ins : program.chips(0).instructions()) {
    if (ins.has_dma() && ins.dma().dst() == program::VMEM) loads.push_back(&ins);
  }
  return loads;
}

TEST(TiledLowering, StreamTilesCapEachTilesBytes) {
  program::Program program;
  // 512 KiB tiles of 256 KiB in and 256 KiB out: 256 MiB / 256 KiB = 1024 tiles.
  EXPECT_EQ(reluLoads("512", program).size(), 1024u);
  for (const program::Instruction* load : reluLoads("512", program)) EXPECT_EQ(load->dma().bytes(), 256u * 1024);
  // 100 KiB: 50 KiB in = 12800 elements, rounded down to whole rows (one element each).
  EXPECT_EQ(reluLoads("100", program).front()->dma().bytes(), 12800u * 4);
}

TEST(TiledLowering, StreamedTilesAreDoubleBuffered) {
  ir::Graph g;
  const int x = g.addInput("x", {64 * 1024 * 1024}, DType::kF32, ir::TensorRole::kInput);  // 256 MiB
  g.markOutput(g.relu("relu", x));
  HardwareParams hw = oneCore();
  hw.set("vmem.stream_tile_kib", "0");  // as large as VMEM allows
  const program::Program program = lowerOne(g, hw);
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
    EXPECT_EQ(producer_stores, 1) << instructionName(ins);  // the one store of the same rows
  }
}

// What `from` waits for, directly or through what it waits for, back to instruction `oldest`.
std::set<uint32_t> waitedFor(const std::map<uint32_t, const program::Instruction*>& by_id, uint32_t from,
                             uint32_t oldest) {
  std::set<uint32_t> seen;
  std::vector<uint32_t> pending{from};
  while (!pending.empty()) {
    const uint32_t id = pending.back();
    pending.pop_back();
    for (uint32_t dep : by_id.at(id)->deps()) {
      if (dep >= oldest && seen.insert(dep).second) pending.push_back(dep);
    }
  }
  return seen;
}

// A strided read (a transpose) loads every tile from anywhere in its input, so each load
// follows every store of the input. Tiles after the second wait for those stores through
// the compute two tiles before; naming them again made n * n dependencies for n tiles
// (found by fuzz/onnx_fuzz: a Pad to millions of rows ran out of memory in the lowering).
TEST(TiledLowering, AStridedReadWaitsForTheInputsStoresOncePerSlot) {
  ir::Graph g;
  const int x = g.addInput("x", {8192, 8192}, DType::kF32, ir::TensorRole::kInput);  // 256 MiB
  g.markOutput(g.transpose("second", g.relu("first", x), {1, 0}));
  const program::Program program = lowerOne(g, oneCore());
  std::map<uint32_t, const program::Instruction*> by_id;
  std::vector<uint32_t> first_stores, second_loads;
  for (const auto& ins : program.chips(0).instructions()) {
    by_id[ins.id()] = &ins;
    if (!ins.has_dma()) continue;
    if (ins.op() == "first" && ins.dma().dst() == program::HBM) first_stores.push_back(ins.id());
    if (ins.op() == "second" && ins.dma().dst() == program::VMEM) second_loads.push_back(ins.id());
  }
  ASSERT_GT(first_stores.size(), 8u);
  ASSERT_GT(second_loads.size(), 8u);
  size_t direct = 0;
  for (uint32_t load : second_loads) {
    for (uint32_t dep : by_id[load]->deps()) direct += by_id[dep]->op() == "first" ? 1 : 0;
    const std::set<uint32_t> before = waitedFor(by_id, load, first_stores.front());
    for (uint32_t store : first_stores) EXPECT_TRUE(before.count(store)) << instructionName(*by_id[load]);
  }
  EXPECT_EQ(direct, 2 * first_stores.size());  // the first tile of each of the two slots
}

// The fuzz input itself: a DenseNet whose Pad adds 4,063,232 rows to a [4, 16, 8, 8] map
// (a 16 GiB tensor, which fits tpuv4's HBM). Its lowering ran out of memory (2.5 GB) in the
// fuzz build on hundreds of millions of dependencies.
TEST(TiledLowering, APadToMillionsOfRowsLowersWithFewDependencies) {
  OnnxImportOptions options;
  options.batch = 4;
  const ImportedModel model =
      importOnnxFile(std::string(TPUSIM_SOURCE_DIR) + "/tests/data/fuzz/onnx_pad_strided_deps.onnx", options);
  const program::Program program =
      compileGraph(buildInferenceGraph(model), HardwareParams::load("tpuv4"), LowerOptions{"pad", "inference", 4})
          .program;
  uint64_t deps = 0;
  for (const auto& ins : program.chips(0).instructions()) deps += static_cast<uint64_t>(ins.deps_size());
  EXPECT_LT(deps, 8 * static_cast<uint64_t>(program.chips(0).instructions_size())) << deps;
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
    if (ins.has_vector() && instructionName(ins).find("combine") != std::string::npos) ++combines;
    if (ins.has_dma() && ins.dma().dst() == program::VMEM && ins.reads(0) == 0) loaded += ins.dma().bytes();
  }
  EXPECT_EQ(elements, 4096u * 4096);
  EXPECT_EQ(loaded, 4096u * 4096 * 4);
  EXPECT_EQ(combines, 1);
  EXPECT_EQ(chip.memory().scratch_bytes(), 2u * 4096 * 4);  // one partial row per core
}

TEST(TiledLowering, AWeightGradientWithFewChannelsSplitsTheBatchOverTheCores) {
  // dw [64, 64, 3, 3] over x [8, 64, 28, 28]: 64 output channels, half an MXU's columns, so
  // each core takes half the batch (K) with all 64 rows, and core 0 adds the two partial sums.
  ir::Graph g;
  ir::ConvGeometry geometry;
  geometry.pads = {1, 1, 1, 1};
  const int x = g.addInput("x", {8, 64, 28, 28}, DType::kF32, ir::TensorRole::kInput);
  const int dy = g.addInput("dy", {8, 64, 28, 28}, DType::kF32, ir::TensorRole::kInput);
  g.markOutput(g.convGradWeight("dw", x, dy, {64, 64, 3, 3}, geometry));
  const program::Program program = lowerOne(g, HardwareParams::load("tpuv4"));
  const program::ChipProgram& chip = program.chips(0);
  std::map<uint32_t, uint64_t> flops;  // per core
  uint64_t rows = 0, partial_bytes = 0, combined = 0;
  for (const auto& ins : chip.instructions()) {
    if (ins.has_matmul()) {
      flops[ins.core()] += ins.flops();
      rows = std::max<uint64_t>(rows, ins.matmul().transpose_out() ? ins.matmul().n() : ins.matmul().m());
    }
    if (ins.has_dma() && ins.dma().dst() != program::VMEM &&
        instructionName(ins).find("partial") != std::string::npos) {
      partial_bytes += ins.dma().bytes();
    }
    if (ins.has_vector() && instructionName(ins).find("combine") != std::string::npos)
      combined += ins.vector().elements();
  }
  const uint64_t total = 2ull * 64 * (8 * 28 * 28) * (64 * 9);
  ASSERT_EQ(flops.size(), 2u);
  EXPECT_EQ(flops[0], total / 2);
  EXPECT_EQ(flops[1], total / 2);
  EXPECT_EQ(rows, 64u);  // every output channel on each core
  EXPECT_EQ(partial_bytes, 2u * 64 * 64 * 9 * 4);
  EXPECT_EQ(combined, 64u * 64 * 9);  // one add per element of the second partial
  ASSERT_EQ(chip.ops_size(), 1);
  EXPECT_EQ(chip.ops(0).tiling().rfind("cores_split_k", 0), 0u);
}

TEST(TiledLowering, AnF16MatmulFeedsTheMxuAtTheConvertedRateAndSpendsNoVectorPassOnItsOperands) {
  // tpuv4's MXU multiplies bf16: f16 vectors are converted on their way into the array, one
  // every mxu.f16_feed_interval_cycles; bf16 ones enter every cycle. Neither operand takes a
  // conversion pass in VMEM, and only the f16 output is rounded (vpu.f16_pack_ops) before its store.
  for (const DType dtype : {DType::kF16, DType::kBF16}) {
    ir::Graph g;
    const int a = g.addInput("a", {512, 256}, dtype, ir::TensorRole::kInput);
    const int b = g.addInput("b", {256, 512}, dtype, ir::TensorRole::kInput);
    g.markOutput(g.matmul("mm", a, b, false, false));
    const program::Program program = lowerOne(g, HardwareParams::load("tpuv4"));
    const program::ChipProgram& chip = program.chips(0);
    const uint32_t expected = dtype == DType::kF16 ? 2 : 1;
    uint64_t matmuls = 0, operand_vector_ops = 0, rounded = 0;
    for (const auto& ins : chip.instructions()) {
      if (ins.has_matmul()) {
        ++matmuls;
        EXPECT_EQ(std::max(1u, ins.matmul().feed_interval()), expected) << instructionName(ins);
      }
      if (!ins.has_vector()) continue;
      const bool operand = instructionName(ins).find("lhs") != std::string::npos ||
                           instructionName(ins).find("rhs") != std::string::npos;
      (operand ? operand_vector_ops : rounded) += ins.vector().elements();
    }
    EXPECT_GT(matmuls, 0u);
    EXPECT_EQ(operand_vector_ops, 0u);
    EXPECT_EQ(rounded, dtype == DType::kF16 ? 512u * 512 : 0u);
    ASSERT_EQ(chip.ops_size(), 1);
    EXPECT_EQ(chip.ops(0).tiling().find("feed_interval=2") != std::string::npos, dtype == DType::kF16)
        << chip.ops(0).tiling();
  }
}

TEST(TiledLowering, ANarrowWeightGradientSplitsItsDepthOverTheMxusAndAddsTheShares) {
  // dw [256, 64, 1, 1] over x [32, 64, 28, 28]: K = 32 x 28 x 28 = 25088 positions, out 256 x 64.
  // The cores take 128 output channels each (as many as an MXU's columns); within a core each
  // MXU sums a quarter of K, and the vector unit adds the other three shares of each output
  // tile once its last product is done.
  ir::Graph g;
  const int x = g.addInput("x", {32, 64, 28, 28}, DType::kBF16, ir::TensorRole::kInput);
  const int dy = g.addInput("dy", {32, 256, 28, 28}, DType::kBF16, ir::TensorRole::kInput);
  g.markOutput(g.convGradWeight("dw", x, dy, {256, 64, 1, 1}, ir::ConvGeometry{}));
  const program::Program program = lowerOne(g, HardwareParams::load("tpuv4"));
  const program::ChipProgram& chip = program.chips(0);
  uint64_t flops = 0, shares = 0, max_depth = 0;
  for (const auto& ins : chip.instructions()) {
    if (ins.has_matmul()) {
      flops += ins.flops();
      max_depth = std::max<uint64_t>(max_depth, ins.matmul().k());
    }
    if (ins.has_vector() && instructionName(ins).find(".shares") != std::string::npos)
      shares += ins.vector().elements();
  }
  EXPECT_EQ(flops, 2ull * 256 * 64 * 25088);
  ASSERT_EQ(chip.ops_size(), 1);
  const std::string& tiling = chip.ops(0).tiling();
  EXPECT_NE(tiling.find("mxu_split=depth"), std::string::npos) << tiling;
  EXPECT_EQ(max_depth, 25088u / 4);  // a quarter of K
  EXPECT_EQ(shares, 3u * 256 * 64);  // each core's 128 x 64, three shares added to the fourth
}

TEST(TiledLowering, AMatmulKeepsItsDepthWholeOnEachMxu) {
  ir::Graph g;
  const int a = g.addInput("a", {128, 4096}, DType::kBF16, ir::TensorRole::kInput);
  const int b = g.addInput("b", {4096, 64}, DType::kBF16, ir::TensorRole::kInput);
  g.markOutput(g.matmul("mm", a, b, false, false));
  const program::Program program = lowerOne(g, HardwareParams::load("tpuv4"));
  ASSERT_EQ(program.chips(0).ops_size(), 1);
  EXPECT_EQ(program.chips(0).ops(0).tiling().find("depth"), std::string::npos) << program.chips(0).ops(0).tiling();
}

// The loads and stores of one op's tiles, by tensor (the DMA's name begins with it).
struct Traffic {
  uint64_t loaded = 0, stored = 0, vmem = 0;
};
Traffic trafficOf(const program::ChipProgram& chip, const std::string& loaded_tensor) {
  Traffic t;
  for (const auto& ins : chip.instructions()) {
    if (!ins.has_dma()) continue;
    if (ins.dma().dst() == program::VMEM && instructionName(ins).find(loaded_tensor) != std::string::npos) {
      t.loaded += ins.dma().bytes();
    }
    if (ins.dma().dst() != program::VMEM) t.stored += ins.dma().bytes();
  }
  for (const auto& buffer : chip.buffers()) {
    if (buffer.space() == program::VMEM) t.vmem += buffer.bytes();
  }
  return t;
}

// GPT-3's position embeddings (2048 x 12288 floats, 96 MiB) added to every example: too
// large to hold in VMEM while the examples stream, so each tile re-reads its share.
TEST(TiledLowering, ABroadcastOperandLargerThanHalfOfVmemStreamsWithTheTiles) {
  ir::Graph g;
  const int x = g.addInput("x", {2, 2048, 12288}, DType::kF32, ir::TensorRole::kInput);
  const int pos = g.addInput("pos", {2048, 12288}, DType::kF32, ir::TensorRole::kInput);
  g.markOutput(g.add("embed", x, pos));
  const program::Program program = lowerOne(g, oneCore());
  const Traffic t = trafficOf(program.chips(0), "pos");
  EXPECT_EQ(t.loaded, 2ull * 2048 * 12288 * 4);  // once per example: one operand element per output element
  EXPECT_EQ(t.stored, 2ull * 2048 * 12288 * 4);
  EXPECT_LE(t.vmem, 16 * kMiB);
}

TEST(TiledLowering, ABroadcastOperandThatFitsIsLoadedOnce) {
  ir::Graph g;
  const int x = g.addInput("x", {64, 256, 1024}, DType::kF32, ir::TensorRole::kInput);
  const int pos = g.addInput("pos", {256, 1024}, DType::kF32, ir::TensorRole::kInput);  // 1 MiB
  g.markOutput(g.add("embed", x, pos));
  EXPECT_EQ(trafficOf(lowerOne(g, oneCore()).chips(0), "pos").loaded, 256ull * 1024 * 4);
}

// GPT-3's causal mask ([2048, 2048] bools, 4 MiB) over bf16 scores whose rows, one per
// head, are 8 MiB: held whole, the mask leaves no room for a double-buffered row of the
// scores and the output, so each tile re-reads its share of the mask; the scalar it
// selects stays held.
TEST(TiledLowering, ABroadcastOperandThatLeavesNoRoomForARowStreamsWithTheTiles) {
  ir::Graph g;
  const int mask = g.addInput("mask", {2048, 2048}, DType::kBool, ir::TensorRole::kInput);
  const int scores = g.addInput("scores", {1, 12, 2048, 2048}, DType::kBF16, ir::TensorRole::kInput);
  const int neg = g.addInput("neg", {}, DType::kBF16, ir::TensorRole::kInput);
  g.markOutput(g.where("causal", mask, scores, neg));
  const program::Program program = lowerOne(g, oneCore());
  const uint64_t elements = 12ull * 2048 * 2048;
  EXPECT_EQ(trafficOf(program.chips(0), "mask").loaded, elements);  // one bool per output element
  EXPECT_EQ(trafficOf(program.chips(0), "scores").loaded, 2 * elements);
  EXPECT_EQ(trafficOf(program.chips(0), "neg").loaded, 2u);
  EXPECT_LE(trafficOf(program.chips(0), "neg").vmem, 16 * kMiB);
}

// Its gradient, summed over the batch into 96 MiB: tiles of the output, each reading its
// elements of every example, instead of one accumulator held whole.
TEST(TiledLowering, ASumOverTheBatchIntoMoreThanHalfOfVmemTilesTheOutput) {
  ir::Graph g;
  const int dy = g.addInput("dy", {2, 2048, 12288}, DType::kF32, ir::TensorRole::kInput);
  g.markOutput(g.reduceSumTo("pos.grad", dy, {2048, 12288}));
  const program::Program program = lowerOne(g, oneCore());
  const program::ChipProgram& chip = program.chips(0);
  const Traffic t = trafficOf(chip, "dy");
  EXPECT_EQ(t.loaded, 2ull * 2048 * 12288 * 4);
  EXPECT_EQ(t.stored, 2048ull * 12288 * 4);
  EXPECT_LE(t.vmem, 16 * kMiB);
  uint64_t elements = 0;
  for (const auto& ins : chip.instructions()) {
    if (ins.has_vector() && ins.vector().kind() == program::REDUCTION) elements += ins.vector().elements();
  }
  EXPECT_EQ(elements, 2ull * 2048 * 12288);
  ASSERT_EQ(chip.ops_size(), 1);
  EXPECT_GT(chip.ops(0).tiles(), 12u);  // 96 MiB out through 16 MiB of VMEM
}

}  // namespace
}  // namespace tpusim
