// ParameterServerStrategy for embedding tables (docs/strategies.md), standalone
// plain C++: W workers, each a chip computing the same step, look up rows of
// the model's embedding tables on P parameter-server shards over DCN; the
// shards' load and the step times follow from the placement policy.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/ps/ps_timing.hpp"

namespace tpusim::ps {

struct ShardStats {
  uint64_t rows_held = 0;  // at the end of the run
  uint64_t bytes_held = 0;
  uint64_t rows = 0;      // rows pulled (each also pushed back as a gradient)
  uint64_t bytes = 0;     // over the shard's DCN link: pulls + pushes (+ re-shard moves)
  uint64_t requests = 0;  // one per row pulled and one per gradient pushed (+ re-shard moves)
  Picos busy = 0;
};

struct PsResult {
  PsConfig config;
  uint64_t workers = 0;
  uint64_t batch = 0;
  uint64_t lookups = 0;
  uint64_t unique_rows = 0;
  std::vector<ShardStats> shards;
  Schedule schedule;
  uint64_t resharded_rows = 0;  // moved by re-shards, over the run
  uint64_t reshards = 0;
  // Max over mean across shards (1 = balanced; 0 when nothing was asked).
  double bytes_imbalance = 0;
  double requests_imbalance = 0;
  double busy_imbalance = 0;
  double meanStepSeconds() const;
  std::vector<double> stepSeconds() const;  // each step: end of step k - end of step k-1
};

// Runs `steps` steps of `workers` workers at `batch` examples each, each
// computing for `compute` per step. Throws Error as generateTraffic.
PsResult runParameterServer(const std::vector<EmbeddingTable>& tables, const PsConfig& config, uint64_t workers,
                            uint64_t batch, uint64_t steps, Picos compute);

// Max over mean of `values` (0 for an empty or all-zero list).
double imbalance(const std::vector<double>& values);

}  // namespace tpusim::ps
