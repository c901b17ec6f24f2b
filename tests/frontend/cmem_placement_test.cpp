// Software-managed CMEM's placement (frontend/passes/cmem_placement.hpp).
#include <gtest/gtest.h>

#include "frontend/passes/cmem_placement.hpp"
#include "sim/common/params.hpp"

namespace tpusim {
namespace {

// Buffers of `bytes` with `loads` DMA loads of their whole size each.
program::ChipProgram chipWith(const std::vector<std::pair<uint64_t, int>>& buffers,
                              program::BufferRole role = program::WEIGHT) {
  program::ChipProgram chip;
  for (size_t i = 0; i < buffers.size(); ++i) {
    program::Buffer* buffer = chip.add_buffers();
    buffer->set_id(static_cast<uint32_t>(i));
    buffer->set_name(std::string("w").append(std::to_string(i)));
    buffer->set_space(program::HBM);
    buffer->set_role(role);
    buffer->set_bytes(buffers[i].first);
    for (int load = 0; load < buffers[i].second; ++load) {
      program::Instruction* ins = chip.add_instructions();
      ins->set_id(static_cast<uint32_t>(chip.instructions_size() - 1));
      ins->mutable_dma()->set_src(program::HBM);
      ins->mutable_dma()->set_dst(program::VMEM);
      ins->mutable_dma()->set_bytes(buffers[i].first);
      ins->add_reads(static_cast<uint32_t>(i));
    }
  }
  return chip;
}

HardwareParams softwareCmem(const char* capacity_mib) {
  HardwareParams hw = HardwareParams::load("tpuv4");
  hw.set("cmem.mode", "software");
  hw.set("cmem.capacity_mib", capacity_mib);
  return hw;
}

TEST(CmemPlacement, PinsByReuseUpToTheCapacity) {
  const uint64_t mib = 1 << 20;
  // 10 MiB of CMEM. w0: 6 MiB read 4 times (reuse 4); w1: 5 MiB read 3 times (3);
  // w2: 3 MiB read 3 times (3); w3: 2 MiB read once (1); w4: 1 MiB never read.
  program::ChipProgram chip = chipWith({{6 * mib, 4}, {5 * mib, 3}, {3 * mib, 3}, {2 * mib, 1}, {mib, 0}});
  const CmemPlacement placement = placeInCmem(chip, softwareCmem("10").config());
  // w0 (6), then w1 (5) would make 11 > 10: skipped; w2 (3) -> 9; w3 (2) would make 11: skipped.
  EXPECT_TRUE(chip.buffers(0).cmem_resident());
  EXPECT_FALSE(chip.buffers(1).cmem_resident());
  EXPECT_TRUE(chip.buffers(2).cmem_resident());
  EXPECT_FALSE(chip.buffers(3).cmem_resident());
  EXPECT_FALSE(chip.buffers(4).cmem_resident());
  EXPECT_EQ(placement.pinned_bytes, 9 * mib);
  EXPECT_LE(placement.pinned_bytes, placement.capacity_bytes);
  EXPECT_EQ(placement.pinned_buffers, 2u);
  EXPECT_EQ(describeCmemPlacement(chip),
            "cmem resident: 2 buffers, 9.000 MiB\n  w0: 6.000 MiB (reuse 4.00)\n  w2: 3.000 MiB (reuse 3.00)\n");
}

TEST(CmemPlacement, EqualReuseTakesTheLargerFirst) {
  const uint64_t mib = 1 << 20;
  program::ChipProgram chip = chipWith({{2 * mib, 2}, {4 * mib, 2}});
  placeInCmem(chip, softwareCmem("4").config());
  EXPECT_FALSE(chip.buffers(0).cmem_resident());
  EXPECT_TRUE(chip.buffers(1).cmem_resident());
}

TEST(CmemPlacement, ActivationsAndOtherModesAreLeftAlone) {
  program::ChipProgram activations = chipWith({{1024, 3}}, program::ACTIVATION);
  EXPECT_EQ(placeInCmem(activations, softwareCmem("1").config()).pinned_buffers, 0u);
  program::ChipProgram weights = chipWith({{1024, 3}});
  HardwareParams cache = softwareCmem("1");
  cache.set("cmem.mode", "cache");
  EXPECT_EQ(placeInCmem(weights, cache.config()).pinned_buffers, 0u);
  EXPECT_FALSE(weights.buffers(0).cmem_resident());
}

}  // namespace
}  // namespace tpusim
