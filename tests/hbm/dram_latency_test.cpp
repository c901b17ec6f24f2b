// Isolated-request latencies of DramModel against the timing formulas (HBM2:
// tRCD 14, tRP 14, tCL 14, tCWL 4, burst 2 cycles), and the request contract.
// An idle model issues a request's first command in its arrival cycle.
#include <gtest/gtest.h>

#include "sim/common/error.hpp"
#include "sim/hbm/dram/dram_model.hpp"
#include "sim/hbm/dram/dram_presets.hpp"

namespace tpusim {
namespace {

// Under ro_ba_co_bg_ch_pc on HBM2: +2048 B is the next column of the same row
// and bank, +4 x 65536 B the next row of the same bank (dram_address_test).
constexpr uint64_t kAddress = 0, kSameRow = 2048, kOtherRow = 4 * 65536;

class DramLatency : public ::testing::Test {
 protected:
  // Returns the completion cycle of one request arriving at `arrival`, and
  // checks it is not reported a cycle early.
  uint64_t complete(DramModel& model, uint64_t address, uint64_t arrival, bool is_write = false) {
    model.advanceTo(arrival);
    model.enqueue(DramRequest{address, 32, is_write, arrival, m_next_id});
    for (uint64_t cycle = arrival + 1; cycle < arrival + 1000; ++cycle) {
      const auto done = model.advanceTo(cycle);
      if (done.empty()) continue;
      EXPECT_EQ(done.size(), 1u);
      EXPECT_EQ(done[0].id, m_next_id);
      EXPECT_EQ(done[0].done_cycle, cycle);
      ++m_next_id;
      return cycle;
    }
    ADD_FAILURE() << "request never completed";
    return 0;
  }

  StatsRegistry m_stats;
  uint64_t m_next_id = 0;
};

TEST_F(DramLatency, MissHitAndConflictOpenPage) {
  DramModel model(hbm2Config(), m_stats);
  // Bank closed: ACT at 100, RD at 100 + tRCD, data ends tCL + burst later: 14 + 14 + 2 = 30.
  EXPECT_EQ(complete(model, kAddress, 100) - 100, 30u);
  // Row open: RD at arrival: tCL + burst = 16.
  EXPECT_EQ(complete(model, kAddress + kSameRow, 500) - 500, 16u);
  // Other row open: PRE, ACT tRP later, RD tRCD later: 14 + 14 + 14 + 2 = 44.
  EXPECT_EQ(complete(model, kAddress + kOtherRow, 1000) - 1000, 44u);
  EXPECT_EQ(m_stats.value("dram.row_misses"), 1);
  EXPECT_EQ(m_stats.value("dram.row_hits"), 1);
  EXPECT_EQ(m_stats.value("dram.row_conflicts"), 1);
  EXPECT_EQ(m_stats.value("dram.activates"), 2);
  EXPECT_EQ(m_stats.value("dram.precharges"), 1);
  EXPECT_EQ(m_stats.value("dram.reads"), 3);
  EXPECT_EQ(m_stats.value("dram.bytes"), 96);
  EXPECT_EQ(m_stats.value("dram.data_bus_busy_cycles"), 6);
  EXPECT_NEAR(m_stats.value("dram.row_hit_rate"), 1.0 / 3, 1e-12);
}

TEST_F(DramLatency, WriteMiss) {
  DramModel model(hbm2Config(), m_stats);
  // ACT, WR tRCD later, data ends tCWL + burst later: 14 + 4 + 2 = 20.
  EXPECT_EQ(complete(model, kAddress, 100, true) - 100, 20u);
  EXPECT_EQ(m_stats.value("dram.writes"), 1);
}

TEST_F(DramLatency, ClosedPageMakesEveryAccessAMiss) {
  DramConfig c = hbm2Config();
  c.page_policy = PagePolicy::kClosed;
  DramModel model(c, m_stats);
  EXPECT_EQ(complete(model, kAddress, 100) - 100, 30u);
  // The RDA closed the row: the same row again is a miss, 30 cycles, not a hit's 16.
  EXPECT_EQ(complete(model, kAddress + kSameRow, 500) - 500, 30u);
  // Another row: no PRE needed, still 30 (a conflict's 44 under open page).
  EXPECT_EQ(complete(model, kAddress + kOtherRow, 1000) - 1000, 30u);
  EXPECT_EQ(m_stats.value("dram.row_misses"), 3);
  EXPECT_EQ(m_stats.value("dram.precharges"), 3);
}

TEST_F(DramLatency, IdleMeansNothingQueuedOrInFlight) {
  DramModel model(hbm2Config(), m_stats);
  EXPECT_TRUE(model.idle());
  model.enqueue(DramRequest{0, 32, false, 0, 1});
  EXPECT_FALSE(model.idle());
  model.advanceTo(29);
  EXPECT_FALSE(model.idle());  // issued, data not yet back (done at 30)
  EXPECT_EQ(model.step().size(), 1u);
  EXPECT_TRUE(model.idle());
}

TEST_F(DramLatency, RequestsMustBeOneBurstInRangeAndInOrder) {
  DramModel model(hbm2Config(), m_stats);
  EXPECT_THROW(model.enqueue(DramRequest{0, 64, false, 0, 1}), Error);
  EXPECT_THROW(model.enqueue(DramRequest{4ull << 30, 32, false, 0, 1}), Error);
  model.enqueue(DramRequest{0, 32, false, 10, 1});
  EXPECT_THROW(model.enqueue(DramRequest{32, 32, false, 9, 2}), Error);
  model.advanceTo(100);
  try {
    model.enqueue(DramRequest{0, 32, false, 50, 3});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("arrives at cycle 50"), std::string::npos);
  }
}

TEST_F(DramLatency, SplitIntoBurstsCoversTheRange) {
  std::vector<DramRequest> out;
  splitIntoBursts(DramRequest{64, 64, true, 5, 9}, 32, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].address, 64u);
  EXPECT_EQ(out[1].address, 96u);
  EXPECT_TRUE(out[1].is_write);
  EXPECT_EQ(out[1].id, 9u);
  out.clear();
  splitIntoBursts(DramRequest{16, 64, false, 0, 0}, 32, out);  // bytes 16 .. 79 touch bursts 0, 1, 2
  EXPECT_EQ(out.size(), 3u);
}

}  // namespace
}  // namespace tpusim
