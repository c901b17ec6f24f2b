// A simulation run in slices with progress reports (sim/chip/driver.hpp) ends where
// one run all at once ends, with the same counters and timeline, and its reports
// climb to every instruction retired.
#include <gtest/gtest.h>

#include <vector>

#include "sim/chip/driver.hpp"
#include "tests/support/program_builder.hpp"
#include "tests/support/test_hardware.hpp"

namespace tpusim {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// A chain of loads, matmuls, vector ops and stores on one chip, some 10^5 cycles long.
program::Program chainProgram() {
  testing::ProgramBuilder b;
  uint32_t last = b.dma(4 * kMiB, true, {});
  for (int i = 0; i < 6; ++i) {
    const uint32_t mm = b.matmul(1024, 1024, 1024, {last});
    const uint32_t v = b.vector(1 << 20, 2, {mm});
    last = b.dma(2 * kMiB, false, {v});
  }
  return b.program();
}

void expectSameResults(const SimResult& whole, const SimResult& sliced) {
  EXPECT_EQ(whole.total_cycles, sliced.total_cycles);
  ASSERT_EQ(whole.stats->entries().size(), sliced.stats->entries().size());
  for (size_t i = 0; i < whole.stats->entries().size(); ++i) {
    const StatEntry& a = whole.stats->entries()[i];
    const StatEntry& b = sliced.stats->entries()[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.value(), b.value()) << a.name;
  }
  ASSERT_EQ(whole.timeline.events().size(), sliced.timeline.events().size());
  for (size_t i = 0; i < whole.timeline.events().size(); ++i) {
    EXPECT_EQ(whole.timeline.events()[i].start_cycle, sliced.timeline.events()[i].start_cycle);
    EXPECT_EQ(whole.timeline.events()[i].end_cycle, sliced.timeline.events()[i].end_cycle);
  }
}

TEST(SimProgress, ASlicedRunEndsAsOneRunAllAtOnce) {
  const program::Program program = chainProgram();
  const SimResult whole = simulate(program, testing::oneCoreAt1GHz());
  ASSERT_GT(whole.total_cycles, 10'000u);
  std::vector<SimProgress> reports;
  const SimResult sliced =
      simulate(program, testing::oneCoreAt1GHz(), [&](const SimProgress& p) { reports.push_back(p); }, 1000);
  expectSameResults(whole, sliced);
  // A report after each window of at least 1000 cycles (longer where no event falls
  // inside), climbing to the end.
  EXPECT_GT(reports.size(), 10u);
  EXPECT_LE(reports.size(), whole.total_cycles / 1000 + 2);
  for (size_t i = 1; i < reports.size(); ++i) {
    EXPECT_GE(reports[i].retired, reports[i - 1].retired);
    EXPECT_GE(reports[i].cycles, reports[i - 1].cycles);
  }
  EXPECT_EQ(reports.back().retired, static_cast<uint64_t>(program.chips(0).instructions_size()));
  EXPECT_EQ(reports.back().instructions, reports.back().retired);
  EXPECT_EQ(reports.back().cycles, whole.total_cycles);
  EXPECT_EQ(reports.front().retired, 0u);  // the start
  EXPECT_EQ(reports.front().cycles, 0u);
}

TEST(SimProgress, ASlicedRunOnASliceMatchesToo) {
  testing::ProgramBuilder b;
  b.slice("3d_torus", "2x2x2", 8);
  const uint32_t mm = b.matmul(512, 512, 512, {});
  const uint32_t ar = b.allReduce(4 * kMiB, program::TORUS, {mm});
  b.matmul(512, 512, 512, {ar});
  const SimResult whole = simulate(b.program(), testing::oneCoreAt1GHz());
  size_t calls = 0;
  const SimResult sliced =
      simulate(b.program(), testing::oneCoreAt1GHz(), [&](const SimProgress&) { ++calls; }, 4096);
  expectSameResults(whole, sliced);
  EXPECT_GT(calls, 2u);
  ASSERT_TRUE(whole.ici && sliced.ici);
  EXPECT_EQ(whole.ici->makespan_ps, sliced.ici->makespan_ps);
}

}  // namespace
}  // namespace tpusim
