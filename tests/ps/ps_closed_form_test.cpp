// The parameter-server model against closed forms (docs/strategies.md): the
// expected per-shard load of round-robin on uniform ids, and the exact busy
// time and step of a single hot row.
#include <cmath>

#include <gtest/gtest.h>

#include "sim/ps/id_generator.hpp"
#include "sim/ps/ps_model.hpp"

namespace tpusim::ps {
namespace {

PsConfig baseConfig() {
  PsConfig c;
  c.dcn_gbps = 25;
  c.dcn_latency_us = 10;
  c.tasks = 4;
  c.request_service_ns = 100;
  c.memory_gbps = 100;
  c.sharding = ShardingPolicy::kRoundRobin;
  c.zipf_exponent = 0;
  c.seed = 7;
  return c;
}

TEST(PsClosedForm, UniformIdsOnRoundRobinLoadEveryShardEqually) {
  // One table of 1,000,000 rows on 4 shards: round-robin puts 250,000 rows on
  // each, so a uniform id is on shard s with probability exactly 1/4. A worker
  // draws 4096 ids per step; 1e6 rows make repeats rare (expected 4096^2 / 2e6
  // = 8.4 per worker-step), so the T unique rows are near-independent draws and
  // a shard's count is Binomial(T, 1/4): mean T/4, sigma sqrt(T x 1/4 x 3/4).
  // 4 workers x 10 steps: T ~ 163,500, mean ~ 40,900, sigma ~ 175. Allowed:
  // 4 sigma (~1.7 %).
  const std::vector<EmbeddingTable> tables = {{"t", 1000000, 64, 1}};
  const PsResult r = runParameterServer(tables, baseConfig(), 4, 4096, 10, 0);
  const double total = static_cast<double>(r.unique_rows);
  EXPECT_GT(total, 163840 - 4 * 10 * 20);  // at most ~20 repeats per worker-step
  const double mean = total / 4, sigma = std::sqrt(total * 0.25 * 0.75);
  uint64_t sum = 0;
  for (const ShardStats& shard : r.shards) {
    EXPECT_NEAR(static_cast<double>(shard.rows), mean, 4 * sigma);
    EXPECT_EQ(shard.bytes, 2 * 64 * shard.rows);  // pulled rows and pushed gradients
    EXPECT_EQ(shard.requests, 2 * shard.rows);
    EXPECT_EQ(shard.rows_held, 250000u);
    sum += shard.rows;
  }
  EXPECT_EQ(sum, r.unique_rows);
  EXPECT_LT(r.bytes_imbalance, 1 + 4 * sigma / mean);
}

TEST(PsClosedForm, ASingleHotRowLoadsOneShardExactly) {
  // A table of one 64-byte row: every id is row 0, on shard 0 (row 0 mod 4).
  // Each of 3 workers pulls it once per step (deduplicated over its batch of 8).
  // Per step, shard 0 serves 3 rows = 192 bytes:
  //   pull = max(192 B / 25 GB/s, 192 B / 100 GB/s) + 3 x 100 ns = 7,680 + 300,000 = 307,680 ps
  //   push = max(192 B / 25 GB/s, 384 B / 100 GB/s) + 3 x 100 ns = 7,680 + 300,000 = 307,680 ps
  // A worker's own link carries 64 B in 2,560 ps, less than the shard's work.
  // sync step = 2L + pull + compute + 2L + push = 20 + 0.30768 + 5 + 20 + 0.30768 us = 45,615,360 ps.
  const std::vector<EmbeddingTable> tables = {{"hot", 1, 64, 1}};
  const Picos compute = 5000000;
  const PsResult r = runParameterServer(tables, baseConfig(), 3, 8, 4, compute);
  ASSERT_EQ(r.shards.size(), 4u);
  EXPECT_EQ(r.shards[0].rows, 3u * 4);
  EXPECT_EQ(r.shards[0].busy, 4u * (307680 + 307680));
  for (size_t s = 1; s < 4; ++s) EXPECT_EQ(r.shards[s].busy, 0u);
  for (size_t k = 0; k < 4; ++k) EXPECT_EQ(r.schedule.step_end[k], (k + 1) * Picos{45615360});
  EXPECT_DOUBLE_EQ(r.busy_imbalance, 4.0);  // all the load on one of 4 shards
  EXPECT_EQ(r.lookups, 3u * 8 * 4);
  EXPECT_EQ(r.unique_rows, 3u * 4);
}

TEST(PsClosedForm, ZipfRankProbabilitiesFollowThePowerLaw) {
  // P(rank k) = k^-s / H(n, s); for n = 3, s = 1: H = 1 + 1/2 + 1/3 = 11/6.
  Rng rng(1);
  const ZipfIds ids(3, 1.0, rng);
  EXPECT_NEAR(ids.rankProbability(0), 6.0 / 11, 1e-12);
  EXPECT_NEAR(ids.rankProbability(2), 2.0 / 11, 1e-12);
  // Drawn frequencies: 110,000 draws, rank 0 expected 60,000 (sigma ~ 165).
  Rng draws(2);
  uint64_t hot = 0;
  for (int i = 0; i < 110000; ++i) hot += ids.draw(draws) == ids.rowOfRank(0);
  EXPECT_NEAR(static_cast<double>(hot), 60000, 4 * 165);
}

TEST(PsClosedForm, RankPermutationIsABijectionThatMovesTheHotRow) {
  Rng rng(3);
  const ZipfIds ids(1000, 1.1, rng);
  std::vector<bool> seen(1000, false);
  for (uint64_t k = 0; k < 1000; ++k) seen[ids.rowOfRank(k)] = true;
  for (bool s : seen) EXPECT_TRUE(s);
  Rng other(4);
  const ZipfIds second(1000, 1.1, other);
  EXPECT_NE(ids.rowOfRank(0), second.rowOfRank(0));  // hot rows differ between tables
}

}  // namespace
}  // namespace tpusim::ps
