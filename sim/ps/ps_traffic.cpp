#include "sim/ps/ps_traffic.hpp"

#include <limits>
#include <string>

#include "sim/common/error.hpp"
#include "sim/ps/id_generator.hpp"

namespace tpusim::ps {

namespace {

void checkRun(const std::vector<EmbeddingTable>& tables, uint64_t workers, uint64_t batch, uint64_t steps) {
  if (workers == 0) throw Error(ErrorKind::kInvalidConfig, "--workers must be > 0");
  if (batch == 0) throw Error(ErrorKind::kInvalidConfig, "the parameter-server run needs a batch > 0");
  if (steps == 0) throw Error(ErrorKind::kInvalidConfig, "the parameter-server run needs --steps > 0");
  if (steps * workers >= std::numeric_limits<uint32_t>::max() / 2 || workers > 65536) {
    throw Error(ErrorKind::kInvalidConfig,
                "--steps x --workers is too large (" + std::to_string(steps) + " x " + std::to_string(workers) + ")");
  }
  if (tables.empty()) {
    throw Error(ErrorKind::kInvalidInput,
                "the model has no embedding tables (a Gather from a weight) to place on parameter servers");
  }
  uint64_t total = 0;
  for (const EmbeddingTable& t : tables) {
    if (t.rows == 0 || t.row_bytes == 0) {
      throw Error(ErrorKind::kInvalidInput, "embedding table '" + t.name + "' is empty");
    }
    total += t.rows;
  }
  if (total > kMaxTotalRows) {
    throw Error(ErrorKind::kUnsupported, "embedding tables of " + std::to_string(total) + " rows (at most " +
                                             std::to_string(kMaxTotalRows) + " are modelled)");
  }
}

}  // namespace

Traffic generateTraffic(const std::vector<EmbeddingTable>& tables, const PsConfig& config, uint64_t workers,
                        uint64_t batch, uint64_t steps) {
  checkPsConfig(config);
  checkRun(tables, workers, batch, steps);
  const uint64_t shards = config.tasks;
  Traffic traffic;
  traffic.steps = steps;
  traffic.workers = workers;
  traffic.shards = shards;
  traffic.load.assign(steps * workers * shards, ShardLoad{});
  traffic.reshards.resize(steps);

  Rng permutation_rng(config.seed);
  Rng id_rng(config.seed ^ 0x5bd1e9955bd1e995ULL);  // a second stream: ids do not shift the permutations
  std::vector<ZipfIds> ids;
  ids.reserve(tables.size());
  for (const EmbeddingTable& t : tables) ids.emplace_back(t.rows, config.zipf_exponent, permutation_rng);

  Placement placement(tables, shards, config.sharding);
  const bool dynamic = config.sharding == ShardingPolicy::kDynamic;
  std::vector<std::vector<uint32_t>> stamp(tables.size()), counts(tables.size());
  for (size_t t = 0; t < tables.size(); ++t) {
    stamp[t].assign(tables[t].rows, 0);
    if (dynamic) counts[t].assign(tables[t].rows, 0);
  }

  for (uint64_t k = 0; k < steps; ++k) {
    if (dynamic && k > 0 && k % config.reshard_every_steps == 0)
      traffic.reshards[k] = placement.reshard(tables, counts);
    for (uint64_t w = 0; w < workers; ++w) {
      const uint32_t token = static_cast<uint32_t>(k * workers + w + 1);  // "seen by this worker this step"
      ShardLoad* loads = &traffic.load[(k * workers + w) * shards];
      for (size_t t = 0; t < tables.size(); ++t) {
        const uint64_t draws = batch * tables[t].lookups_per_example;
        traffic.lookups += draws;
        for (uint64_t i = 0; i < draws; ++i) {
          const uint64_t row = ids[t].draw(id_rng);
          if (stamp[t][row] == token) continue;
          stamp[t][row] = token;
          ShardLoad& load = loads[placement.shardOf(t, row)];
          load.rows += 1;
          load.bytes += tables[t].row_bytes;
          traffic.unique_rows += 1;
          if (dynamic) counts[t][row] += 1;
        }
      }
    }
  }
  traffic.shard_bytes = placement.bytesPerShard(tables);
  traffic.shard_rows = placement.rowsPerShard();
  return traffic;
}

}  // namespace tpusim::ps
