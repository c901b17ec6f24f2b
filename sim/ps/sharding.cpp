#include "sim/ps/sharding.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>
#include <set>
#include <utility>

namespace tpusim::ps {

namespace {

// The shard with the least load; ties go to the lowest index, so placements are deterministic.
class LeastLoaded {
 public:
  explicit LeastLoaded(uint64_t shards) {
    for (uint64_t s = 0; s < shards; ++s) m_heap.push({0, static_cast<uint16_t>(s)});
  }
  uint16_t take(uint64_t load) {
    auto [current, shard] = m_heap.top();
    m_heap.pop();
    m_heap.push({current + load, shard});
    return shard;
  }

 private:
  using Entry = std::pair<uint64_t, uint16_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> m_heap;
};

}  // namespace

Placement::Placement(const std::vector<EmbeddingTable>& tables, uint64_t shards, ShardingPolicy policy)
    : m_shards(shards), m_shard(tables.size()) {
  if (policy == ShardingPolicy::kSizeBalanced) {
    std::vector<size_t> order(tables.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return tables[a].rows * tables[a].row_bytes > tables[b].rows * tables[b].row_bytes;
    });
    LeastLoaded least(shards);
    for (size_t t : order) {
      m_shard[t].assign(tables[t].rows, least.take(tables[t].rows * tables[t].row_bytes));
    }
    return;
  }
  uint64_t global = 0;  // round_robin, and dynamic's start
  for (size_t t = 0; t < tables.size(); ++t) {
    m_shard[t].resize(tables[t].rows);
    for (uint64_t r = 0; r < tables[t].rows; ++r, ++global) m_shard[t][r] = static_cast<uint16_t>(global % shards);
  }
}

std::vector<uint64_t> Placement::bytesPerShard(const std::vector<EmbeddingTable>& tables) const {
  std::vector<uint64_t> bytes(m_shards, 0);
  for (size_t t = 0; t < tables.size(); ++t) {
    for (uint16_t s : m_shard[t]) bytes[s] += tables[t].row_bytes;
  }
  return bytes;
}

std::vector<uint64_t> Placement::rowsPerShard() const {
  std::vector<uint64_t> rows(m_shards, 0);
  for (const std::vector<uint16_t>& table : m_shard) {
    for (uint16_t s : table) rows[s] += 1;
  }
  return rows;
}

ReshardMoves Placement::reshard(const std::vector<EmbeddingTable>& tables,
                                const std::vector<std::vector<uint32_t>>& counts) {
  struct Hot {
    uint64_t load;
    uint32_t table;
    uint64_t row;
  };
  std::vector<Hot> hot;
  for (size_t t = 0; t < tables.size(); ++t) {
    for (uint64_t r = 0; r < tables[t].rows; ++r) {
      if (counts[t][r] >= kHotAccesses)
        hot.push_back({counts[t][r] * tables[t].row_bytes, static_cast<uint32_t>(t), r});
    }
  }
  std::sort(hot.begin(), hot.end(), [](const Hot& a, const Hot& b) {
    if (a.load != b.load) return a.load > b.load;
    return a.table != b.table ? a.table < b.table : a.row < b.row;
  });
  uint64_t total = 0;
  for (const Hot& h : hot) total += h.load;
  // A row stays on its shard while that shard's load is within the fair share;
  // otherwise it goes to the least-loaded shard. Most rows keep their place, so
  // a re-shard moves only what the balance needs.
  const uint64_t fair = (total + m_shards - 1) / m_shards;
  std::vector<uint64_t> load(m_shards, 0);
  std::set<std::pair<uint64_t, uint16_t>> by_load;  // (load, shard): the least loaded first, ties by index
  for (uint64_t s = 0; s < m_shards; ++s) by_load.insert({0, static_cast<uint16_t>(s)});
  ReshardMoves moves;
  moves.bytes_out.assign(m_shards, 0);
  moves.bytes_in.assign(m_shards, 0);
  moves.rows_out.assign(m_shards, 0);
  moves.rows_in.assign(m_shards, 0);
  for (const Hot& h : hot) {
    uint16_t& from = m_shard[h.table][h.row];
    const uint16_t to = load[from] + h.load <= fair ? from : by_load.begin()->second;
    by_load.erase({load[to], to});
    load[to] += h.load;
    by_load.insert({load[to], to});
    if (from == to) continue;
    const uint64_t bytes = tables[h.table].row_bytes;
    moves.rows += 1;
    moves.bytes_out[from] += bytes;
    moves.rows_out[from] += 1;
    moves.bytes_in[to] += bytes;
    moves.rows_in[to] += 1;
    from = to;
  }
  return moves;
}

}  // namespace tpusim::ps
