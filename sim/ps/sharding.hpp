// Where each embedding row lives: one of P parameter-server shards
// (docs/strategies.md, "Sharding policies").
//   round_robin    rows numbered through all tables, table after table; row g on shard g mod P
//   size_balanced  whole tables, largest first, each onto the shard with the fewest bytes so far
//   dynamic        round_robin until the first re-shard; then every N steps the rows seen so far,
//                  most accessed first (load = accesses x the row's bytes), each stays on its shard
//                  while that shard is within the fair share (total load / P) and otherwise goes to
//                  the least-loaded shard. Rows seen fewer than kHotAccesses times stay where they
//                  are: one access predicts nothing, and the tail is balanced by round_robin anyway.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/ps/ps_config.hpp"

namespace tpusim::ps {

// One embedding table: a weight that a Gather reads rows of.
struct EmbeddingTable {
  std::string name;
  uint64_t rows = 0;
  uint64_t row_bytes = 0;            // one row (and one row's gradient)
  uint64_t lookups_per_example = 1;  // ids one example looks up in it
};

// Dynamic sharding places the rows accessed at least this often (deduplicated
// accesses since the start of the run).
inline constexpr uint32_t kHotAccesses = 2;

// Rows moved by a re-shard, per shard.
struct ReshardMoves {
  uint64_t rows = 0;
  std::vector<uint64_t> bytes_out;  // per shard: rows it sends away
  std::vector<uint64_t> bytes_in;   // per shard: rows it receives
  std::vector<uint64_t> rows_out;
  std::vector<uint64_t> rows_in;
};

class Placement {
 public:
  // The policy's initial placement (dynamic starts as round_robin).
  Placement(const std::vector<EmbeddingTable>& tables, uint64_t shards, ShardingPolicy policy);

  uint16_t shardOf(size_t table, uint64_t row) const { return m_shard[table][row]; }
  uint64_t shards() const { return m_shards; }
  // Bytes of rows held by each shard.
  std::vector<uint64_t> bytesPerShard(const std::vector<EmbeddingTable>& tables) const;
  std::vector<uint64_t> rowsPerShard() const;

  // Dynamic re-shard from `counts[t][r]` (accesses so far); returns the moves.
  ReshardMoves reshard(const std::vector<EmbeddingTable>& tables, const std::vector<std::vector<uint32_t>>& counts);

 private:
  uint64_t m_shards;
  std::vector<std::vector<uint16_t>> m_shard;  // [table][row]
};

}  // namespace tpusim::ps
