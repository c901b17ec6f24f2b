#include "sim/hbm/cmem_tags.hpp"

namespace tpusim {

CmemTags::CmemTags(uint64_t sets, uint64_t ways)
    : m_sets(sets), m_ways(ways), m_set_mask((sets & (sets - 1)) == 0 ? sets - 1 : 0), m_way(sets * ways) {}

CmemLookup CmemTags::access(uint64_t line, bool write) {
  Way* set = &m_way[setOf(line) * m_ways];
  CmemLookup result;
  // One pass over the set: the line if it is there, else the way used longest ago
  // (an empty way has never been used, so it goes first).
  Way* victim = set;
  for (Way* way = set; way < set + m_ways; ++way) {
    if (way->tag == line) {
      result.hit = true;
      victim = way;
      break;
    }
    if (way->used < victim->used) victim = way;
  }
  if (!result.hit) {
    if (victim->tag != kEmpty && victim->dirty) {
      result.evicted_dirty = true;
      result.evicted_line = victim->tag;
    }
    victim->tag = line;
    victim->dirty = false;
  }
  victim->used = ++m_clock;
  if (write && !victim->dirty) {
    victim->dirty = true;
    result.dirtied = true;
  }
  return result;
}

const CmemTags::Way* CmemTags::find(uint64_t line) const {
  const Way* set = &m_way[setOf(line) * m_ways];
  for (const Way* way = set; way < set + m_ways; ++way) {
    if (way->tag == line) return way;
  }
  return nullptr;
}

bool CmemTags::contains(uint64_t line) const { return find(line) != nullptr; }

bool CmemTags::dirty(uint64_t line) const {
  const Way* way = find(line);
  return way != nullptr && way->dirty;
}

}  // namespace tpusim
