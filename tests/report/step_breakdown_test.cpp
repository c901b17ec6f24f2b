// The step breakdown (report/step_breakdown.hpp) on hand-made timelines, whose parts are
// worked out by hand.
#include "report/step_breakdown.hpp"

#include <gtest/gtest.h>

namespace tpusim {
namespace {

struct Case {
  program::ChipProgram chip;
  Timeline timeline;
  void add(program::Unit unit, uint64_t start, uint64_t end) {
    program::Instruction* ins = chip.add_instructions();
    ins->set_id(static_cast<uint32_t>(chip.instructions_size() - 1));
    ins->set_unit(unit);
    TimelineEvent event;
    event.instruction = ins->id();
    event.start_cycle = start;
    event.end_cycle = end;
    timeline.record(event);
  }
};

TEST(StepBreakdown, EachCycleCountsOnceInTheFirstPartThatCoversIt) {
  Case c;
  c.add(program::DMA, 0, 40);    // 0-10 alone, 10-40 under compute
  c.add(program::MXU, 10, 30);
  c.add(program::VPU, 25, 50);   // compute covers 10-50: 40 cycles
  c.add(program::ICI, 45, 80);   // 45-50 under compute, 50-60 under DMA, 60-80 alone
  c.add(program::DMA, 50, 60);
  const StepBreakdown b = stepBreakdown(c.chip, c.timeline, 100);  // 80-100: idle
  EXPECT_EQ(b.compute_cycles, 40u);
  EXPECT_EQ(b.mxu_cycles, 20u);
  EXPECT_EQ(b.vpu_cycles, 25u);
  EXPECT_EQ(b.exposed_memory_cycles, 20u);  // 0-10 and 50-60
  EXPECT_EQ(b.exposed_communication_cycles, 20u);
  EXPECT_EQ(b.overlapped_communication_cycles, 15u);
  EXPECT_EQ(b.idle_cycles, 20u);
  EXPECT_EQ(b.compute_cycles + b.exposed_memory_cycles + b.exposed_communication_cycles + b.idle_cycles, 100u);
  EXPECT_EQ(stepBottleneck(b), "compute (VPU)");
}

TEST(StepBreakdown, HostStallJoinsThePartitionAndCanBeTheBottleneck) {
  Case c;
  c.add(program::MXU, 0, 60);
  c.add(program::DMA, 50, 100);
  nlohmann::ordered_json section = stepBreakdownSection(stepBreakdown(c.chip, c.timeline, 100));
  EXPECT_EQ(section["bottleneck"], "compute (MXU)");
  EXPECT_DOUBLE_EQ(section["shares"]["compute"].get<double>(), 0.6);
  addHostInputStall(section, 300);
  EXPECT_EQ(section["host_input_stall_cycles"], 300);
  EXPECT_DOUBLE_EQ(section["shares"]["host_input_stall"].get<double>(), 0.75);  // 300 of 400
  EXPECT_DOUBLE_EQ(section["shares"]["compute"].get<double>(), 0.15);
  EXPECT_EQ(section["bottleneck"], "host input pipeline");
}

TEST(StepBreakdown, ExposedDmaAndCommunicationNameTheirBottlenecks) {
  Case memory;
  memory.add(program::DMA, 0, 90);
  memory.add(program::VPU, 80, 100);
  EXPECT_EQ(stepBottleneck(stepBreakdown(memory.chip, memory.timeline, 100)),
            "HBM traffic (DMA not hidden by compute)");
  Case links;
  links.add(program::ICI, 0, 70);
  links.add(program::MXU, 60, 100);
  EXPECT_EQ(stepBottleneck(stepBreakdown(links.chip, links.timeline, 100)), "interconnect (collectives not hidden)");
  Case empty;
  const StepBreakdown idle = stepBreakdown(empty.chip, empty.timeline, 10);
  EXPECT_EQ(idle.idle_cycles, 10u);
  EXPECT_EQ(stepBottleneck(idle), "idle (dependencies and latency)");
}

}  // namespace
}  // namespace tpusim
