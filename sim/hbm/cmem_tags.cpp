#include "sim/hbm/cmem_tags.hpp"

namespace tpusim {

CmemTags::CmemTags(uint64_t sets, uint64_t ways)
    : m_sets(sets), m_ways(ways), m_set_mask((sets & (sets - 1)) == 0 ? sets - 1 : 0), m_way(sets * ways) {}

const CmemTags::Way* CmemTags::find(uint64_t line) const {
  const Way* set = &m_way[setOf(line) * m_ways];
  for (const Way* way = set; way < set + m_ways; ++way) {
    if (way->tag == line) return way;
  }
  return nullptr;
}

bool CmemTags::contains(uint64_t line) const {
  return find(line) != nullptr;
}

bool CmemTags::dirty(uint64_t line) const {
  const Way* way = find(line);
  return way != nullptr && way->dirty;
}

}  // namespace tpusim
