// Sharding policies, aggregation and determinism of the parameter-server model
// (docs/strategies.md), on the 26 tables of traces/dlrm.onnx.
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "sim/ps/ps_model.hpp"
#include "tests/ps/ps_test_tables.hpp"

namespace tpusim::ps {
namespace {

constexpr Picos kCompute = 323000000;  // 323 us: dlrm's simulated training step at batch 32 on tpuv4

PsConfig config(ShardingPolicy policy, double zipf, Aggregation aggregation = Aggregation::kSync) {
  PsConfig c;  // the preset values of dcn.* and ps.*
  c.sharding = policy;
  c.zipf_exponent = zipf;
  c.aggregation = aggregation;
  return c;
}

PsResult run(const PsConfig& c, uint64_t workers = 32, uint64_t steps = 10) {
  return runParameterServer(test::dlrmTables(), c, workers, 32, steps, kCompute);
}

TEST(PsPolicy, DynamicBeatsRoundRobinOnSkewedIdsAndTiesOnUniformOnes) {
  // 32 workers x 16 tasks. Skewed (Zipf 1.1): a table's hot rows are pulled by
  // every worker every step, and round-robin leaves some shards with more of
  // them; dynamic re-places them by their counts.
  const PsResult rr = run(config(ShardingPolicy::kRoundRobin, 1.1));
  const PsResult dyn = run(config(ShardingPolicy::kDynamic, 1.1));
  EXPECT_EQ(rr.unique_rows, dyn.unique_rows);  // the same ids
  EXPECT_GT(dyn.reshards, 0u);
  EXPECT_LT(dyn.busy_imbalance, rr.busy_imbalance - 0.03);
  EXPECT_LT(dyn.meanStepSeconds(), rr.meanStepSeconds() * 0.995);
  // Uniform: nothing to predict; both within 2 % of each other.
  const PsResult rr_u = run(config(ShardingPolicy::kRoundRobin, 0));
  const PsResult dyn_u = run(config(ShardingPolicy::kDynamic, 0));
  EXPECT_NEAR(dyn_u.meanStepSeconds() / rr_u.meanStepSeconds(), 1.0, 0.02);
  EXPECT_NEAR(dyn_u.busy_imbalance, rr_u.busy_imbalance, 0.03);
}

TEST(PsPolicy, DynamicReshardsEveryNStepsAndPaysForTheMoves) {
  PsConfig c = config(ShardingPolicy::kDynamic, 1.1);
  c.reshard_every_steps = 3;
  const PsResult r = run(c, 8, 10);
  EXPECT_EQ(r.reshards, 3u);  // before steps 3, 6 and 9
  for (size_t k = 0; k < 10; ++k) EXPECT_EQ(r.schedule.reshard[k] > 0, k == 3 || k == 6 || k == 9) << k;
  EXPECT_GT(r.resharded_rows, 0u);
  // A re-shard moves only part of the rows it looked at: most stay.
  EXPECT_LT(r.resharded_rows, r.unique_rows / 2);
}

TEST(PsPolicy, SizeBalancedKeepsWholeTablesAndBalancesBytes) {
  const PsResult r = run(config(ShardingPolicy::kSizeBalanced, 1.1), 4, 2);
  // Eight 100,000-row tables (6.4 MB each) and 93,145 rows go largest first onto
  // 16 shards: no shard holds two big tables, so the largest holds 6.4 MB.
  uint64_t held = 0, largest = 0;
  for (const ShardStats& s : r.shards) {
    held += s.bytes_held;
    largest = std::max(largest, s.bytes_held);
  }
  EXPECT_EQ(held, 840543u * 64);
  EXPECT_EQ(largest, 100000u * 64);
  // Whole tables concentrate a table's traffic: worse than round-robin.
  EXPECT_GT(r.busy_imbalance, run(config(ShardingPolicy::kRoundRobin, 1.1), 4, 2).busy_imbalance);
}

TEST(PsAggregation, AsyncWithOneWorkerIsSync) {
  // One worker: nobody to overlap with, first come first served is the sync phases.
  const PsResult sync = run(config(ShardingPolicy::kRoundRobin, 1.1), 1, 6);
  const PsResult async = run(config(ShardingPolicy::kRoundRobin, 1.1, Aggregation::kAsync), 1, 6);
  EXPECT_EQ(sync.schedule.step_end, async.schedule.step_end);
}

TEST(PsAggregation, AsyncRunsAheadWithinTheStalenessBound) {
  PsConfig c = config(ShardingPolicy::kRoundRobin, 1.1, Aggregation::kAsync);
  const PsResult sync = run(config(ShardingPolicy::kRoundRobin, 1.1), 8, 10);
  for (uint64_t staleness : {0u, 2u}) {
    c.staleness_steps = staleness;
    const PsResult async = run(c, 8, 10);
    // A worker starts step k only once every worker has finished step k - 1 - S.
    const Schedule& s = async.schedule;
    for (uint64_t k = staleness + 1; k < 10; ++k) {
      Picos last = 0;
      for (uint64_t w = 0; w < 8; ++w) last = std::max(last, s.worker_end[(k - 1 - staleness) * 8 + w]);
      for (uint64_t w = 0; w < 8; ++w) EXPECT_GE(s.worker_start[k * 8 + w], last) << k << " " << w;
    }
    // The shards serve requests one at a time, so their busy time is the same work.
    EXPECT_LE(async.meanStepSeconds(), sync.meanStepSeconds() * 1.0001) << staleness;
  }
  c.staleness_steps = 2;
  const PsResult ahead = run(c, 8, 10);
  c.staleness_steps = 0;
  EXPECT_LT(ahead.meanStepSeconds(), run(c, 8, 10).meanStepSeconds());
}

TEST(PsDeterminism, TheSameSeedGivesTheSameRunAndAnotherSeedAnother) {
  for (Aggregation a : {Aggregation::kSync, Aggregation::kAsync}) {
    const PsResult first = run(config(ShardingPolicy::kDynamic, 1.1, a), 8, 6);
    const PsResult second = run(config(ShardingPolicy::kDynamic, 1.1, a), 8, 6);
    EXPECT_EQ(first.schedule.step_end, second.schedule.step_end);
    EXPECT_EQ(first.schedule.shard_busy, second.schedule.shard_busy);
    EXPECT_EQ(first.resharded_rows, second.resharded_rows);
  }
  PsConfig other = config(ShardingPolicy::kDynamic, 1.1);
  other.seed = 2;
  EXPECT_NE(run(other, 8, 6).schedule.shard_busy, run(config(ShardingPolicy::kDynamic, 1.1), 8, 6).schedule.shard_busy);
}

}  // namespace
}  // namespace tpusim::ps
