#include "sim/hbm/cmem_tags.hpp"

namespace tpusim {

CmemTags::CmemTags(uint64_t sets, uint64_t ways)
    : m_sets(sets), m_ways(ways), m_tag(sets * ways, kEmpty), m_used(sets * ways, 0), m_dirty(sets * ways, 0) {}

CmemLookup CmemTags::access(uint64_t line, bool write) {
  const uint64_t base = (line % m_sets) * m_ways;
  CmemLookup result;
  // One pass over the set: the line if it is there, else the way used longest ago
  // (an empty way has never been used, so it goes first).
  uint64_t victim = base;
  for (uint64_t way = base; way < base + m_ways; ++way) {
    if (m_tag[way] == line) {
      result.hit = true;
      victim = way;
      break;
    }
    if (m_used[way] < m_used[victim]) victim = way;
  }
  if (!result.hit) {
    if (m_tag[victim] != kEmpty && m_dirty[victim]) {
      result.evicted_dirty = true;
      result.evicted_line = m_tag[victim];
    }
    m_tag[victim] = line;
    m_dirty[victim] = 0;
  }
  m_used[victim] = ++m_clock;
  if (write && !m_dirty[victim]) {
    m_dirty[victim] = 1;
    result.dirtied = true;
  }
  return result;
}

uint64_t CmemTags::find(uint64_t line) const {
  const uint64_t base = (line % m_sets) * m_ways;
  for (uint64_t way = base; way < base + m_ways; ++way) {
    if (m_tag[way] == line) return way;
  }
  return kEmpty;
}

bool CmemTags::contains(uint64_t line) const { return find(line) != kEmpty; }

bool CmemTags::dirty(uint64_t line) const {
  const uint64_t way = find(line);
  return way != kEmpty && m_dirty[way];
}

}  // namespace tpusim
