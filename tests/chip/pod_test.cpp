// Collectives run by chip 0's ICI unit over the pod's network of every replica
// (sim/chip/pod.hpp), against the alpha-beta closed forms of docs/interconnect.md.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/chip/driver.hpp"
#include "sim/common/error.hpp"
#include "tests/support/program_builder.hpp"
#include "tests/support/test_hardware.hpp"

namespace tpusim {
namespace {

// tpuv4's links at a 1 GHz clock (cycles = ns): alpha = 1000 ns per hop (link latency,
// router 0), beta = 50 GB/s = 50 bytes/ns.
constexpr double kAlphaNs = 1000;
constexpr double kBytesPerNs = 50;
constexpr uint64_t kMiB = uint64_t{1} << 20;

const TimelineEvent& eventOf(const SimResult& result, uint32_t instruction) {
  for (const TimelineEvent& event : result.timeline.events()) {
    if (event.instruction == instruction) return event;
  }
  throw std::runtime_error("instruction never ran");
}

double cyclesOf(const SimResult& result, uint32_t instruction) {
  const TimelineEvent& event = eventOf(result, instruction);
  return static_cast<double>(event.end_cycle - event.start_cycle);
}

TEST(PodCollectives, TorusAllReduceOnAnUncontendedTorusMatchesTheClosedForm) {
  testing::ProgramBuilder b;
  b.slice("3d_torus", "4x4x4", 64);
  const uint32_t ar = b.allReduce(4 * kMiB, program::TORUS, {});
  const SimResult result = simulate(b.program(), testing::oneCoreAt1GHz());
  // 2 sum_d (p_d - 1)(alpha + n_d / (2 p_d beta)), n_x = 4 MiB, n_y = 1 MiB, n_z = 256 KiB, p_d = 4:
  // 2 x 3 x (3000 + (524288 + 131072 + 32768) / 50) = 2 x 3 x 16762.88 = 100,575.36 ns.
  double expected = 0;
  double n = 4.0 * kMiB;
  for (int d = 0; d < 3; ++d, n /= 4) expected += 2 * 3 * (kAlphaNs + n / (2 * 4 * kBytesPerNs));
  EXPECT_NEAR(expected, 100575.36, 1e-6);
  EXPECT_NEAR(cyclesOf(result, ar), expected, 0.01 * expected);
  EXPECT_DOUBLE_EQ(result.stats->value("ici.collectives"), 1);
  EXPECT_DOUBLE_EQ(result.stats->value("ici.chips"), 64);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.ici.instructions"), 1);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.ici.bytes"), 4.0 * kMiB);
  // Each directed x link carries (p - 1) chunks of n / 2p each way round, twice (reduce-scatter and
  // all-gather): 2 x 3 x 4 MiB / 8 = 3 MiB; y and z lines carry the same on 1/4 and 1/16 of it.
  ASSERT_TRUE(result.ici);
  EXPECT_EQ(result.ici->links[Topology::linkId(0, 0, +1)].bytes, 3 * kMiB);
  EXPECT_EQ(result.ici->links[Topology::linkId(0, 1, -1)].bytes, 3 * kMiB / 4);
  EXPECT_EQ(result.ici->links[Topology::linkId(63, 2, +1)].bytes, 3 * kMiB / 16);
  // Over all 384 directed links: 64 x 2 x (3 + 3/4 + 3/16) MiB.
  EXPECT_DOUBLE_EQ(result.stats->value("ici.bytes"), 64.0 * 2 * (2 * 3 * (4.0 * kMiB / 8)) * (1 + 0.25 + 0.0625));
}

// Tensor parallel (frontend/passes/tensor_parallel.hpp): a collective over groups of 4
// consecutive chips, the x lines of 4x4x4, runs in all 16 groups at once on disjoint links.
TEST(PodCollectives, TensorParallelGroupAllReduceMatchesTheRingClosedForm) {
  testing::ProgramBuilder b;
  b.slice("3d_torus", "4x4x4", 64);
  const uint32_t ar = b.allReduce(4 * kMiB, program::BIDIRECTIONAL_RING, {});
  b.program().mutable_chips(0)->mutable_instructions(ar)->mutable_collective()->set_replicas(4);
  const SimResult result = simulate(b.program(), testing::oneCoreAt1GHz());
  // Bidirectional ring, p = 4 neighbours (the wraparound closes it), n = 4 MiB:
  // 2(p-1)(alpha + (n/2p)/beta) = 6 x (1000 + 524288 / 50) = 6 x 11485.76 = 68,914.56 ns.
  const double expected = 2 * 3 * (kAlphaNs + 4.0 * kMiB / (2 * 4) / kBytesPerNs);
  EXPECT_NEAR(expected, 68914.56, 1e-6);
  EXPECT_NEAR(cyclesOf(result, ar), expected, 0.01 * expected);
  ASSERT_TRUE(result.ici);
  // Every x link of every group carries 2 x 3 chunks of n/8 = 3 MiB; no y or z link is used.
  for (ChipId chip = 0; chip < 64; ++chip) {
    EXPECT_EQ(result.ici->links[Topology::linkId(chip, 0, +1)].bytes, 3 * kMiB);
    EXPECT_EQ(result.ici->links[Topology::linkId(chip, 0, -1)].bytes, 3 * kMiB);
    EXPECT_EQ(result.ici->links[Topology::linkId(chip, 1, +1)].bytes, 0u);
    EXPECT_EQ(result.ici->links[Topology::linkId(chip, 2, -1)].bytes, 0u);
  }
}

// The data-parallel groups beside tp = 4: chips 4 apart, the 16 chips of each y-z plane,
// one bidirectional ring in member order; they never use an x link.
TEST(PodCollectives, DataParallelGroupsBesideTensorParallelStayOffTheXLinks) {
  testing::ProgramBuilder b;
  b.slice("3d_torus", "4x4x4", 64);
  const uint32_t ar = b.allReduce(kMiB, program::BIDIRECTIONAL_RING, {});
  program::Collective* c = b.program().mutable_chips(0)->mutable_instructions(ar)->mutable_collective();
  c->set_replicas(16);
  c->set_group_stride(4);
  const SimResult result = simulate(b.program(), testing::oneCoreAt1GHz());
  ASSERT_TRUE(result.ici);
  uint64_t x_bytes = 0, yz_bytes = 0;
  for (ChipId chip = 0; chip < 64; ++chip) {
    for (int dir : {+1, -1}) {
      x_bytes += result.ici->links[Topology::linkId(chip, 0, dir)].bytes;
      yz_bytes += result.ici->links[Topology::linkId(chip, 1, dir)].bytes;
      yz_bytes += result.ici->links[Topology::linkId(chip, 2, dir)].bytes;
    }
  }
  EXPECT_EQ(x_bytes, 0u);
  EXPECT_GT(yz_bytes, 0u);
  // No faster than the ring closed form over 16 neighbours: 2 x 15 x (alpha + n/32/beta).
  EXPECT_GE(cyclesOf(result, ar), 2 * 15 * (kAlphaNs + kMiB / 32.0 / kBytesPerNs));
}

TEST(PodCollectives, RingAllReducesOnARingMatchTheirClosedForms) {
  // p = 8 neighbours in id order, n = 8 MiB: ring 2(p-1)(alpha + (n/p)/beta),
  // bidirectional 2(p-1)(alpha + (n/2p)/beta).
  const double p = 8, n = 8.0 * kMiB;
  for (const auto& [algorithm, per_step] :
       {std::pair{program::RING, n / p}, std::pair{program::BIDIRECTIONAL_RING, n / (2 * p)}}) {
    testing::ProgramBuilder b;
    b.slice("ring", "8", 8);
    const uint32_t ar = b.allReduce(8 * kMiB, algorithm, {});
    const SimResult result = simulate(b.program(), testing::oneCoreAt1GHz());
    const double expected = 2 * (p - 1) * (kAlphaNs + per_step / kBytesPerNs);
    EXPECT_NEAR(cyclesOf(result, ar), expected, 0.01 * expected) << program::CollectiveAlgorithm_Name(algorithm);
  }
}

TEST(PodCollectives, TwoAllReducesInFlightShareTheLinks) {
  // Launched together, the two queue for every link. A directed x link then serializes
  // 2 collectives x 2 phases x 3 chunks of 4 MiB / 8 = 12 x 10,485.76 ns = 125,829 ns, more
  // than one all-reduce alone takes (100,575 ns), so the pair must end after that; it ends
  // before twice the single time because the later one's x phase overlaps the earlier
  // one's y and z phases (different links).
  testing::ProgramBuilder alone;
  alone.slice("3d_torus", "4x4x4", 64);
  alone.allReduce(4 * kMiB, program::TORUS, {});
  const uint64_t single = simulate(alone.program(), testing::oneCoreAt1GHz()).total_cycles;
  testing::ProgramBuilder b;
  b.slice("3d_torus", "4x4x4", 64);
  const uint32_t first = b.allReduce(4 * kMiB, program::TORUS, {});
  const uint32_t second = b.allReduce(4 * kMiB, program::TORUS, {});
  const SimResult result = simulate(b.program(), testing::oneCoreAt1GHz());
  EXPECT_EQ(eventOf(result, first).start_cycle, 0u);
  EXPECT_EQ(eventOf(result, second).start_cycle, 0u);  // the ICI unit does not wait for the first
  const double x_link_busy_ns = 12 * (4.0 * kMiB / 8) / kBytesPerNs;
  EXPECT_DOUBLE_EQ(static_cast<double>(result.ici->links[Topology::linkId(0, 0, +1)].busy_ps),
                   std::ceil(x_link_busy_ns * 1000));
  EXPECT_GT(static_cast<double>(result.total_cycles), x_link_busy_ns);
  EXPECT_LT(result.total_cycles, 2 * single);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.ici.busy_cycles"), static_cast<double>(result.total_cycles));
}

TEST(PodCollectives, ComputeOverlapsACollectiveUntilADependentNeedsIt) {
  // The vector op does not depend on the all-reduce and runs beside it; the second one does.
  testing::ProgramBuilder b;
  b.slice("3d_torus", "4x4x4", 64);
  const uint32_t ar = b.allReduce(4 * kMiB, program::TORUS, {});
  const uint32_t beside = b.vector(1024 * 100, 1, {});
  const uint32_t after = b.vector(1024 * 100, 1, {ar});
  const SimResult result = simulate(b.program(), testing::oneCoreAt1GHz());
  EXPECT_EQ(eventOf(result, beside).start_cycle, 0u);
  EXPECT_EQ(eventOf(result, after).start_cycle, eventOf(result, ar).end_cycle);
}

TEST(PodCollectives, DependencyWaitCountsOnlyCyclesWithNoCollectiveInFlight) {
  // ar0 runs from 0; ar1 waits for a 102-cycle vector op while ar0 is in flight (no wait
  // counted); after both, ar2 waits for a vector op that needs them: that wait counts.
  testing::ProgramBuilder b;
  b.slice("3d_torus", "4x4x4", 64);
  const uint32_t v0 = b.vector(1024 * 100, 1, {});
  const uint32_t ar0 = b.allReduce(4 * kMiB, program::TORUS, {});
  const uint32_t ar1 = b.allReduce(kMiB, program::TORUS, {v0});
  const uint32_t v1 = b.vector(1024 * 100, 1, {ar0, ar1});
  const uint32_t ar2 = b.allReduce(kMiB, program::TORUS, {v1});
  const SimResult result = simulate(b.program(), testing::oneCoreAt1GHz());
  EXPECT_EQ(eventOf(result, ar1).start_cycle, 102u);
  const uint64_t both_done = std::max(eventOf(result, ar0).end_cycle, eventOf(result, ar1).end_cycle);
  EXPECT_EQ(eventOf(result, ar2).start_cycle - both_done, 102u);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.ici.dependency_wait_cycles"), 102);
  const double total = static_cast<double>(result.total_cycles);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.ici.busy_cycles"), total - 102);
  EXPECT_DOUBLE_EQ(result.stats->value("chip0.ici.idle_cycles"), 0);
}

std::string simulateError(const program::Program& program, const HardwareParams& hw) {
  try {
    simulate(program, hw);
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

TEST(PodCollectives, BadSlicesAreOneLineErrors) {
  testing::ProgramBuilder shape;
  shape.slice("3d_torus", "4x4x2", 64);
  shape.allReduce(kMiB, program::TORUS, {});
  EXPECT_EQ(simulateError(shape.program(), testing::oneCoreAt1GHz()),
            "ICI shape 4x4x2 has 32 chips, but the slice has 64");
  testing::ProgramBuilder replicas;
  replicas.slice("3d_torus", "4x4x4", 64);
  replicas.allReduce(kMiB, program::TORUS, {});
  replicas.program().set_replicas(8);
  EXPECT_NE(
      simulateError(replicas.program(), testing::oneCoreAt1GHz()).find("spans 64 replicas 1 apart, which do not tile the Program's 8"),
      std::string::npos);
  testing::ProgramBuilder links;
  links.slice("3d_torus", "4x4x4", 64);
  links.allReduce(kMiB, program::TORUS, {});
  HardwareParams two_links = testing::oneCoreAt1GHz();
  two_links.set("ici.links", "4");
  EXPECT_EQ(simulateError(links.program(), two_links),
            "ICI slice 4x4x4 (3d_torus) needs 6 links per chip but tpuv4 has ici.links 4");
  testing::ProgramBuilder single;
  single.allReduce(kMiB, program::TORUS, {});  // no slice: a group of no replicas
  EXPECT_NE(simulateError(single.program(), testing::oneCoreAt1GHz())
                .find("is a collective over an empty group (0 replicas)"),
            std::string::npos);
  testing::ProgramBuilder one_chip;
  one_chip.slice("", "", 1);
  one_chip.allReduce(kMiB, program::TORUS, {});  // a group of one is no collective: one chip has no ICI port
  EXPECT_EQ(simulateError(one_chip.program(), testing::oneCoreAt1GHz()),
            "instruction 0 (all_reduce0) is a collective but the Program runs on one chip (no ICI slice)");
}

}  // namespace
}  // namespace tpusim
