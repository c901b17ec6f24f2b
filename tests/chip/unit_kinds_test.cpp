// Every component of a simulated chip declares itself in the stats registry with its kind
// (sim/common/stats.hpp, UnitKind), once, and registers its stats under that name: the
// report finds its DMA engines, the DRAM and the CMEM by kind.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "sim/chip/driver.hpp"
#include "tests/support/program_builder.hpp"

namespace tpusim {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

std::map<UnitKind, int> kindsOf(const StatsRegistry& stats) {
  std::map<UnitKind, int> kinds;
  for (const UnitRecord& unit : stats.units()) ++kinds[unit.kind];
  return kinds;
}

program::Program loadMatmulStore() {
  testing::ProgramBuilder b;
  const uint32_t load = b.dma(4 * kMiB, true, {});
  const uint32_t mm = b.matmul(512, 512, 512, {load});
  b.dma(kMiB, false, {b.vector(1 << 16, 1, {mm})});
  return b.program();
}

TEST(UnitKinds, EachComponentOfTheChipDeclaresItsKindOnce) {
  HardwareParams hw = HardwareParams::load("tpuv4");
  hw.set("hbm.model", "dram");
  hw.set("cmem.mode", "cache");
  const config::HardwareConfig& config = hw.config();
  const SimResult result = simulate(loadMatmulStore(), hw);
  const StatsRegistry& stats = *result.stats;
  const int cores = static_cast<int>(config.chip().tensor_cores());
  EXPECT_EQ(kindsOf(stats), (std::map<UnitKind, int>{
                                {UnitKind::kSimulation, 1},
                                {UnitKind::kTensorCore, cores},
                                {UnitKind::kMxu, cores * static_cast<int>(config.mxu().per_core())},
                                {UnitKind::kVpu, cores},
                                {UnitKind::kDma, cores * static_cast<int>(config.dma().engines_per_core())},
                                {UnitKind::kHbm, 1},
                                {UnitKind::kDram, 1},
                                {UnitKind::kCmem, 1},
                            }));
  // One chip: no ICI port, no network.
  EXPECT_EQ(stats.kindOf("chip0.hbm.dram"), UnitKind::kDram);
  EXPECT_EQ(stats.kindOf("chip0.cmem"), UnitKind::kCmem);
  // Each unit has stats under its name.
  for (const UnitRecord& unit : stats.units()) {
    int under = 0;
    for (const StatEntry& stat : stats.entries()) under += stat.name.rfind(unit.name + ".", 0) == 0 ? 1 : 0;
    EXPECT_GT(under, 0) << unit.name;
  }
}

TEST(UnitKinds, TheBandwidthModelHasNoDramAndCmemOffHasNoCmem) {
  HardwareParams hw = HardwareParams::load("tpuv4");
  hw.set("hbm.model", "bandwidth");
  hw.set("cmem.mode", "off");
  const SimResult result = simulate(loadMatmulStore(), hw);
  const std::map<UnitKind, int> kinds = kindsOf(*result.stats);
  EXPECT_EQ(kinds.count(UnitKind::kDram), 0u);
  EXPECT_EQ(kinds.count(UnitKind::kCmem), 0u);
  EXPECT_EQ(kinds.at(UnitKind::kHbm), 1);
}

TEST(UnitKinds, ASliceAddsTheChipsIciPortAndTheNetwork) {
  testing::ProgramBuilder b;
  b.slice("3d_torus", "2x2x2", 8);
  b.allReduce(4 * kMiB, program::TORUS, {b.matmul(512, 512, 512, {})});
  const SimResult result = simulate(b.program(), HardwareParams::load("tpuv4"));
  EXPECT_EQ(result.stats->kindOf("chip0.ici"), UnitKind::kIci);
  EXPECT_EQ(result.stats->kindOf("ici"), UnitKind::kNetwork);
  EXPECT_EQ(kindsOf(*result.stats).at(UnitKind::kIci), 1);
}

}  // namespace
}  // namespace tpusim
