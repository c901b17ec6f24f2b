#include "sim/ps/ps_model.hpp"

#include <algorithm>
#include <numeric>

namespace tpusim::ps {

double imbalance(const std::vector<double>& values) {
  if (values.empty()) return 0;
  const double sum = std::accumulate(values.begin(), values.end(), 0.0);
  if (sum <= 0) return 0;
  return *std::max_element(values.begin(), values.end()) / (sum / static_cast<double>(values.size()));
}

double PsResult::meanStepSeconds() const {
  if (schedule.step_end.empty()) return 0;
  return secondsFromPicos(schedule.step_end.back()) / static_cast<double>(schedule.step_end.size());
}

std::vector<double> PsResult::stepSeconds() const {
  std::vector<double> seconds;
  Picos previous = 0;
  for (Picos end : schedule.step_end) {
    seconds.push_back(secondsFromPicos(end - previous));
    previous = end;
  }
  return seconds;
}

PsResult runParameterServer(const std::vector<EmbeddingTable>& tables, const PsConfig& config, uint64_t workers,
                            uint64_t batch, uint64_t steps, Picos compute) {
  const Traffic traffic = generateTraffic(tables, config, workers, batch, steps);
  const ShardCosts costs(config);
  PsResult result;
  result.config = config;
  result.workers = workers;
  result.batch = batch;
  result.lookups = traffic.lookups;
  result.unique_rows = traffic.unique_rows;
  result.schedule = config.aggregation == Aggregation::kSync
                        ? scheduleSync(traffic, costs, compute)
                        : scheduleAsync(traffic, costs, compute, config.staleness_steps);
  result.shards.assign(traffic.shards, ShardStats{});
  for (uint64_t k = 0; k < traffic.steps; ++k) {
    for (uint64_t w = 0; w < traffic.workers; ++w) {
      for (uint64_t s = 0; s < traffic.shards; ++s) {
        const ShardLoad& load = traffic.at(k, w, s);
        result.shards[s].rows += load.rows;
        result.shards[s].bytes += 2 * load.bytes;
        result.shards[s].requests += 2 * load.rows;
      }
    }
    const ReshardMoves& moves = traffic.reshards[k];
    if (moves.rows == 0) continue;
    result.reshards += 1;
    result.resharded_rows += moves.rows;
    for (uint64_t s = 0; s < traffic.shards; ++s) {
      result.shards[s].bytes += moves.bytes_out[s] + moves.bytes_in[s];
      result.shards[s].requests += moves.rows_in[s];
    }
  }
  std::vector<double> bytes, requests, busy;
  for (uint64_t s = 0; s < traffic.shards; ++s) {
    ShardStats& shard = result.shards[s];
    shard.bytes_held = traffic.shard_bytes[s];
    shard.rows_held = traffic.shard_rows[s];
    shard.busy = result.schedule.shard_busy[s];
    bytes.push_back(static_cast<double>(shard.bytes));
    requests.push_back(static_cast<double>(shard.requests));
    busy.push_back(static_cast<double>(shard.busy));
  }
  result.bytes_imbalance = imbalance(bytes);
  result.requests_imbalance = imbalance(requests);
  result.busy_imbalance = imbalance(busy);
  return result;
}

}  // namespace tpusim::ps
