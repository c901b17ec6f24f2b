// CMEM between the DMA engines and HBM, against the closed forms of
// docs/memory.md ("CMEM"): cold reads, hits, LRU eviction, write-back, and
// software-mode residency.
#include <gtest/gtest.h>

#include "sim/chip/driver.hpp"
#include "sim/common/error.hpp"
#include "tests/support/program_builder.hpp"
#include "tests/support/test_hardware.hpp"

namespace tpusim {
namespace {

// 1 GHz. HBM: 1000 B per cycle, 100 cycles latency. CMEM: 4000 B per cycle, 10 cycles
// hit latency, 1 KiB lines; 1 MiB = 1024 lines in 256 sets of 4 ways.
HardwareParams cacheHardware(const char* capacity_mib = "1", const char* ways = "4") {
  HardwareParams hw = testing::oneCoreAt1GHz();
  hw.set("hbm.bandwidth_gbps", "1000");
  hw.set("hbm.latency_ns", "100");
  hw.set("cmem.mode", "cache");
  hw.set("cmem.capacity_mib", capacity_mib);
  hw.set("cmem.line_bytes", "1024");
  hw.set("cmem.associativity", ways);
  hw.set("cmem.bandwidth_gbps", "4000");
  hw.set("cmem.hit_latency_ns", "10");
  return hw;
}

// A load (or store) of `bytes` at HBM byte `address`, after `deps`. The builder's
// Programs have no buffers, so any address is valid.
uint32_t transfer(testing::ProgramBuilder& b, uint64_t address, uint64_t bytes, bool load,
                  std::initializer_list<uint32_t> deps) {
  const uint32_t id = b.dma(bytes, load, deps, 0, load ? 0 : 1);
  b.program().mutable_chips(0)->mutable_instructions(static_cast<int>(id))->mutable_dma()->set_hbm_address(address);
  return id;
}

double stat(const SimResult& result, const std::string& name) {
  return result.stats->value(std::string("chip0.cmem.").append(name));
}

TEST(Cmem, ColdReadCostsTheHbmTimePlusTheFill) {
  testing::ProgramBuilder b;
  transfer(b, 0, 102'400, true, {});  // 100 lines
  const SimResult result = simulate(b.program(), cacheHardware());
  // HBM: ceil(102400 / 1000) = 103 + 100 latency = 203; fill: ceil(102400 / 4000) = 26 -> 229.
  EXPECT_EQ(result.total_cycles, 229u);
  EXPECT_EQ(stat(result, "misses"), 100);
  EXPECT_EQ(stat(result, "hits"), 0);
  EXPECT_EQ(stat(result, "bytes_from_hbm"), 102'400);
  EXPECT_EQ(result.stats->value("chip0.hbm.bytes_read"), 102'400);
  EXPECT_EQ(stat(result, "busy_cycles"), 26);
}

TEST(Cmem, TheSameReadAgainHitsAtCmemBandwidthAndHitLatency) {
  testing::ProgramBuilder b;
  const uint32_t cold = transfer(b, 0, 102'400, true, {});
  transfer(b, 0, 102'400, true, {cold});
  const SimResult result = simulate(b.program(), cacheHardware());
  // 229 (above), then ceil(102400 / 4000) = 26 + 10 hit latency = 36: 265.
  EXPECT_EQ(result.total_cycles, 265u);
  EXPECT_EQ(stat(result, "hits"), 100);
  EXPECT_EQ(stat(result, "misses"), 100);
  EXPECT_DOUBLE_EQ(stat(result, "hit_rate"), 0.5);
  EXPECT_EQ(stat(result, "bytes_from_cmem"), 102'400);
  EXPECT_EQ(result.stats->value("chip0.hbm.bytes_read"), 102'400);  // HBM only saw the cold read
}

TEST(Cmem, PartlyCachedReadFetchesOnlyTheMissedLines) {
  testing::ProgramBuilder b;
  const uint32_t first = transfer(b, 0, 10'240, true, {});  // lines 0..9: 11 + 100 + 3 = 114
  transfer(b, 0, 20'480, true, {first});                    // lines 0..19: 10 hit, 10 missed
  const SimResult result = simulate(b.program(), cacheHardware());
  // From 114: hits ceil(10240 / 4000) = 3 + 10 = 13; HBM 11 + 100 = 111, then the fill's
  // 3 cycles on the port (free again at 117) -> 114 + 111 + 3 = 228.
  EXPECT_EQ(result.total_cycles, 228u);
  EXPECT_EQ(result.stats->value("chip0.hbm.bytes_read"), 20'480);
  EXPECT_EQ(stat(result, "hits"), 10);
}

TEST(Cmem, AStridedReadLooksUpOnlyTheLinesOfItsRows) {
  testing::ProgramBuilder b;
  // 4 rows of one line each, 8 lines apart: lines 0, 8, 16 and 24.
  const uint32_t strided = b.dmaAt(0, 4, 1024, 8192, true, {});
  transfer(b, 0, 32'768, true, {strided});  // lines 0..31: the 4 above hit
  const SimResult result = simulate(b.program(), cacheHardware());
  EXPECT_EQ(stat(result, "misses"), 4 + 28);
  EXPECT_EQ(stat(result, "hits"), 4);
  EXPECT_EQ(stat(result, "bytes_from_cmem"), 4 * 1024);
  EXPECT_EQ(result.stats->value("chip0.hbm.bytes_read"), 32 * 1024);  // every line once
}

TEST(Cmem, AReadEvictedByItsSetPaysHbmAgain) {
  // 4 KiB = 4 lines in 2 sets of 2 ways: lines 0, 2 and 4 all map to set 0. One missed
  // line costs ceil(1024 / 1000) = 2 + 100 on HBM + a 1-cycle fill = 103; a hit 1 + 10 = 11.
  testing::ProgramBuilder b;
  const uint32_t a = transfer(b, 0, 1024, true, {});          // line 0: miss, 0 .. 103
  const uint32_t c = transfer(b, 2048, 1024, true, {a});      // line 2: miss, .. 206
  const uint32_t again = transfer(b, 0, 1024, true, {c});     // line 0: hit, .. 217; line 2 is now LRU
  const uint32_t e = transfer(b, 4096, 1024, true, {again});  // line 4: miss, evicts line 2, .. 320
  const uint32_t hit = transfer(b, 0, 1024, true, {e});       // line 0 stayed: hit, .. 331
  transfer(b, 2048, 1024, true, {hit});                       // line 2 was evicted: miss, .. 434
  const SimResult result = simulate(b.program(), cacheHardware("0.00390625", "2"));
  EXPECT_EQ(result.total_cycles, 434u);
  EXPECT_EQ(stat(result, "hits"), 2);
  EXPECT_EQ(stat(result, "misses"), 4);
  EXPECT_EQ(stat(result, "bytes_written_back"), 0);  // every victim was clean
}

TEST(Cmem, WritesLandInCmemAndDirtyVictimsAreWrittenBack) {
  // As above, 2 sets of 2 ways.
  testing::ProgramBuilder b;
  const uint32_t w = transfer(b, 0, 1024, false, {});      // line 0 written: 1 + 10 = 11, dirty
  const uint32_t r1 = transfer(b, 2048, 1024, true, {w});  // line 2: miss, 11 + 103 = 114
  // Line 4 evicts line 0 (LRU), which is dirty: its write-back and the fill go to HBM at
  // 114: the write 114 .. 116 (done 216), the read 116 .. 118 (done 218), the fill -> 219.
  transfer(b, 4096, 1024, true, {r1});
  const SimResult result = simulate(b.program(), cacheHardware("0.00390625", "2"));
  EXPECT_EQ(result.total_cycles, 219u);
  EXPECT_EQ(stat(result, "bytes_to_cmem"), 1024);
  EXPECT_EQ(stat(result, "bytes_written_back"), 1024);
  EXPECT_EQ(result.stats->value("chip0.hbm.bytes_written"), 1024);
  EXPECT_EQ(stat(result, "dirty_bytes"), 0);
}

TEST(Cmem, DirtyLinesLeftAtTheEndStayInCmem) {
  testing::ProgramBuilder b;
  transfer(b, 0, 8192, false, {});  // 8 lines written: ceil(8192 / 4000) = 3 + 10 = 13
  const SimResult result = simulate(b.program(), cacheHardware());
  EXPECT_EQ(result.total_cycles, 13u);
  EXPECT_EQ(stat(result, "dirty_bytes"), 8192);
  EXPECT_EQ(result.stats->value("chip0.hbm.bytes_written"), 0);
}

// Software mode: buffer 0 (1 MiB at 0) is pinned, buffer 1 (1 MiB at 1 MiB) is not.
program::Program softwareProgram(bool pin_both) {
  testing::ProgramBuilder b;
  program::ChipProgram& chip = *b.program().mutable_chips(0);
  for (uint32_t id = 0; id < 3; ++id) {
    program::Buffer* buffer = chip.add_buffers();
    buffer->set_id(id);
    buffer->set_name(std::string("b").append(std::to_string(id)));
    buffer->set_space(id < 2 ? program::HBM : program::VMEM);
    buffer->set_bytes(1 << 20);
    buffer->set_offset(id == 1 ? 1 << 20 : 0);
    buffer->set_role(program::WEIGHT);
    buffer->set_cmem_resident(id == 0 || (pin_both && id == 1));
  }
  const uint32_t pinned = b.dma(102'400, true, {});
  const uint32_t other = b.dma(102'400, true, {pinned});
  for (uint32_t id : {pinned, other}) {
    program::Instruction& ins = *chip.mutable_instructions(static_cast<int>(id));
    ins.add_reads(id == pinned ? 0 : 1);
    ins.add_writes(2);
    ins.mutable_dma()->set_hbm_address(id == pinned ? 0 : 1 << 20);  // its buffer's first byte
  }
  return b.program();
}

TEST(Cmem, SoftwareModeServesResidentBuffersFromCmemAlone) {
  HardwareParams hw = cacheHardware("2");
  hw.set("cmem.mode", "software");
  const SimResult result = simulate(softwareProgram(false), hw);
  // Pinned: ceil(102400 / 4000) = 26 + 10 = 36. Then HBM: 103 + 100 = 203 -> 239.
  EXPECT_EQ(result.total_cycles, 239u);
  EXPECT_EQ(result.stats->value("chip0.hbm.bytes_read"), 102'400);
  EXPECT_EQ(stat(result, "bytes_from_cmem"), 102'400);
  EXPECT_EQ(stat(result, "hits"), 100);
  EXPECT_EQ(stat(result, "misses"), 100);
}

TEST(Cmem, SoftwareModeRefusesMoreResidentBytesThanTheCapacity) {
  HardwareParams hw = cacheHardware("1.5");  // 1.5 MiB, but 2 MiB are pinned
  hw.set("cmem.mode", "software");
  try {
    simulate(softwareProgram(true), hw);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kResource);
    EXPECT_NE(std::string(error.what()).find("2.00 MiB of buffers resident in CMEM, which holds 1.50 MiB"),
              std::string::npos)
        << error.what();
  }
}

TEST(Cmem, OffLeavesTheDmaPathAsItWas) {
  HardwareParams hw = cacheHardware();
  hw.set("cmem.mode", "off");
  testing::ProgramBuilder b;
  const uint32_t first = transfer(b, 0, 102'400, true, {});
  transfer(b, 0, 102'400, true, {first});
  const SimResult result = simulate(b.program(), hw);
  EXPECT_EQ(result.total_cycles, 406u);  // 2 x (103 + 100)
  EXPECT_EQ(result.stats->find("chip0.cmem.hits"), nullptr);
}

}  // namespace
}  // namespace tpusim
