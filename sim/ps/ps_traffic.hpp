// What the workers ask of the shards, step by step (docs/strategies.md): each
// step each worker draws batch x lookups_per_example ids per table
// (id_generator.hpp), keeps each row once (deduplicated per worker per step),
// and pulls it from the shard holding it; it pushes the row's gradient back to
// the same shard. Dynamic sharding re-places rows before steps N, 2N, ... from
// the access counts so far (each deduplicated access counts once).
//
// Traffic does not depend on timing: every policy and aggregation sees the same
// ids for the same seed.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/ps/ps_config.hpp"
#include "sim/ps/sharding.hpp"

namespace tpusim::ps {

// Rows (and their bytes) one worker pulls from one shard in one step; the
// push sends the same number of gradient rows back.
struct ShardLoad {
  uint64_t rows = 0;
  uint64_t bytes = 0;
};

struct Traffic {
  uint64_t steps = 0;
  uint64_t workers = 0;
  uint64_t shards = 0;
  std::vector<ShardLoad> load;         // [(step x workers + worker) x shards + shard]
  std::vector<ReshardMoves> reshards;  // per step; rows = 0 where none happened
  std::vector<uint64_t> shard_bytes;   // bytes of rows each shard holds at the end
  std::vector<uint64_t> shard_rows;    // rows each shard holds at the end
  uint64_t lookups = 0;                // ids drawn, before deduplication
  uint64_t unique_rows = 0;            // rows pulled, summed over workers and steps

  const ShardLoad& at(uint64_t step, uint64_t worker, uint64_t shard) const {
    return load[(step * workers + worker) * shards + shard];
  }
};

// The most rows, over all tables, the model holds in memory (18 bytes per row).
inline constexpr uint64_t kMaxTotalRows = uint64_t{1} << 26;

// Throws Error: kInvalidConfig for a bad config, zero workers, batch or steps;
// kInvalidInput for no tables or an empty one; kUnsupported above kMaxTotalRows.
Traffic generateTraffic(const std::vector<EmbeddingTable>& tables, const PsConfig& config, uint64_t workers,
                        uint64_t batch, uint64_t steps);

}  // namespace tpusim::ps
