// Dependency ordering and overlap in the TensorCore's sequencer and units.
#include <gtest/gtest.h>

#include "sim/chip/driver.hpp"
#include "sim/core/vector_unit.hpp"
#include "sim/mxu/array_timing.hpp"
#include "tests/support/program_builder.hpp"
#include "tests/support/test_hardware.hpp"

namespace tpusim {
namespace {

HardwareParams testHardware() {
  return testing::oneCoreAt1GHz();
}

const TimelineEvent& eventOf(const SimResult& result, uint32_t instruction) {
  for (const TimelineEvent& event : result.timeline.events()) {
    if (event.instruction == instruction) return event;
  }
  throw std::runtime_error("instruction never ran");
}

TEST(Sequencer, IndependentUnitsOverlap) {
  testing::ProgramBuilder b;
  b.matmul(128, 128, 128, {});  // 510 cycles on mxu0
  b.vector(1024 * 100, 1, {});  // 2 + 100 = 102 cycles on the VPU
  const SimResult result = simulate(b.program(), testHardware());
  // Both start at 0; the step takes as long as the longer one.
  EXPECT_EQ(eventOf(result, 0).start_cycle, 0u);
  EXPECT_EQ(eventOf(result, 1).start_cycle, 0u);
  EXPECT_EQ(result.total_cycles, 510u);
}

// Kernels (Instruction.kernel) run one after another on a core: the second starts only once
// every instruction of the first has retired, then waits core.kernel_launch_cycles.
TEST(Sequencer, AKernelStartsWhenTheCoresEarlierKernelsRetiredAndAfterItsLaunch) {
  testing::ProgramBuilder b;
  b.matmul(128, 128, 128, {});  // kernel 1, mxu0: 50 .. 560 (after the launch)
  b.vector(1024 * 100, 1, {});  // kernel 2: independent, but waits for kernel 1: 560 + 50 .. 712
  b.vector(1024 * 100, 1, {});  // kernel 2 as well: right behind it on the VPU, 712 .. 814
  program::Program program = b.program();
  auto& instructions = *program.mutable_chips(0)->mutable_instructions();
  instructions[0].set_kernel(1);
  instructions[1].set_kernel(2);
  instructions[2].set_kernel(2);
  HardwareParams hw = testHardware();
  hw.set("core.kernel_launch_cycles", "50");
  const SimResult result = simulate(program, hw);
  EXPECT_EQ(eventOf(result, 0).start_cycle, 50u);
  EXPECT_EQ(eventOf(result, 1).start_cycle, 610u);
  EXPECT_EQ(eventOf(result, 2).start_cycle, 712u);
  EXPECT_EQ(result.total_cycles, 814u);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.core0.kernel_launches"), 2);
  // Without kernel numbers (0) nothing waits: the vector work overlaps the matmul.
  const SimResult free = simulate(b.program(), hw);
  EXPECT_EQ(eventOf(free, 1).start_cycle, 0u);
  EXPECT_EQ(free.total_cycles, 510u);
}

TEST(Sequencer, DependentInstructionsSerialize) {
  testing::ProgramBuilder b;
  b.matmul(128, 128, 128, {});   // 0 .. 510
  b.vector(1024 * 100, 1, {0});  // waits for the matmul: 510 .. 612
  const SimResult result = simulate(b.program(), testHardware());
  EXPECT_EQ(eventOf(result, 1).start_cycle, 510u);
  EXPECT_EQ(eventOf(result, 1).end_cycle, 612u);
  EXPECT_EQ(result.total_cycles, 612u);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.core0.vpu.dependency_wait_cycles"), 510);
}

TEST(Sequencer, SameUnitRunsInProgramOrder) {
  testing::ProgramBuilder b;
  b.matmul(128, 128, 128, {});        // 0 .. 510
  b.matmul(128, 128, 128, {});        // same MXU, no dependency: 510 .. 1020
  b.matmul(128, 128, 128, {}, 0, 1);  // another MXU: 0 .. 510
  const SimResult result = simulate(b.program(), testHardware());
  EXPECT_EQ(eventOf(result, 1).start_cycle, 510u);
  EXPECT_EQ(eventOf(result, 2).start_cycle, 0u);
  EXPECT_EQ(result.total_cycles, 1020u);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.core0.mxu0.busy_cycles"), 1020);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.core0.mxu0.utilization"), 1.0);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.core0.mxu1.utilization"), 0.5);
}

TEST(Sequencer, DiamondWaitsForBothBranches) {
  testing::ProgramBuilder b;
  b.vector(1024 * 10, 1, {});          // 0: 0 .. 12
  b.matmul(128, 128, 128, {0});        // 1: 12 .. 522 on mxu0
  b.matmul(256, 128, 128, {0}, 0, 1);  // 2: 12 .. 12 + 128 + 256+254 = 650 on mxu1
  b.vector(1024, 1, {1, 2});           // 3: 650 .. 653
  const SimResult result = simulate(b.program(), testHardware());
  EXPECT_EQ(eventOf(result, 2).end_cycle, 650u);
  EXPECT_EQ(eventOf(result, 3).start_cycle, 650u);
  EXPECT_EQ(result.total_cycles, 653u);
}

TEST(Sequencer, SmallIssueQueueStillCompletes) {
  // A one-deep queue makes the sequencer block on a busy unit; the
  // no-deadlock argument of tensor_core.hpp says the run still completes.
  HardwareParams hw = testHardware();
  hw.set("core.issue_queue_depth", "1");
  testing::ProgramBuilder b;
  for (int i = 0; i < 20; ++i) b.matmul(128, 128, 128, {});
  b.vector(1024, 1, {19});
  const SimResult result = simulate(b.program(), hw);
  EXPECT_EQ(result.total_cycles, 20u * 510 + 3);
}

TEST(Sequencer, RunsAreDeterministicAndRepeatableInOneProcess) {
  testing::ProgramBuilder b;
  b.dma(1 << 20, true, {});
  b.matmul(512, 512, 512, {0});
  b.vector(512 * 512, 2, {1});
  b.dma(1 << 20, false, {2}, 0, 1);
  const SimResult first = simulate(b.program(), testHardware());
  const SimResult second = simulate(b.program(), testHardware());
  EXPECT_EQ(first.total_cycles, second.total_cycles);
  ASSERT_EQ(first.timeline.events().size(), second.timeline.events().size());
  for (size_t i = 0; i < first.timeline.events().size(); ++i) {
    EXPECT_EQ(first.timeline.events()[i].start_cycle, second.timeline.events()[i].start_cycle);
    EXPECT_EQ(first.timeline.events()[i].instruction, second.timeline.events()[i].instruction);
  }
}

TEST(VectorUnit, ClosedForm) {
  // 128 lanes x 8 sublanes = 1024 per cycle; 5000 elements x 3 ops = 15000 -> ceil = 15, + 2 latency = 17
  EXPECT_EQ(vectorOpCycles(5000, 3, VpuShape{128, 8, 2}), 17u);
  testing::ProgramBuilder b;
  b.vector(5000, 3, {});
  EXPECT_EQ(simulate(b.program(), testHardware()).total_cycles, 17u);
}

TEST(Mxu, SimulatedCyclesEqualClosedForm) {
  testing::ProgramBuilder b;
  b.matmul(1024, 256, 384, {});
  const SimResult result = simulate(b.program(), testHardware());
  EXPECT_EQ(result.total_cycles, arrayTiming(ArrayConfig{}, MatmulShape{1024, 256, 384, 1}).cycles);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.core0.mxu0.macs"), 1024.0 * 256 * 384);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.core0.mxu0.folds"), 6);
}

}  // namespace
}  // namespace tpusim
