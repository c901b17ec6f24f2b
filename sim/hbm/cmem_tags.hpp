// The tags of CMEM in cache mode: `sets` x `ways` lines, looked up by line
// address (byte address / line_bytes), set = line % sets, least recently used
// way replaced. Plain C++, no SystemC: the cache model (cmem.hpp) asks it one
// line at a time, and bench/cmem_bench.cpp measures how fast it answers.
#pragma once

#include <cstdint>
#include <vector>

namespace tpusim {

struct CmemLookup {
  bool hit = false;
  bool dirtied = false;        // a write made a clean (or new) line dirty
  bool evicted_dirty = false;  // a miss replaced a dirty line, which must be written back
  uint64_t evicted_line = 0;   // its line address
};

class CmemTags {
 public:
  CmemTags(uint64_t sets, uint64_t ways);

  // Looks `line` up and makes it the set's most recently used line; a miss
  // allocates it in the set's least recently used (or an empty) way. A write
  // leaves the line dirty.
  CmemLookup access(uint64_t line, bool write);
  bool contains(uint64_t line) const;
  bool dirty(uint64_t line) const;

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Way {
    uint64_t tag = kEmpty;  // the line held
    uint64_t used = 0;      // the access count at its last use (0: never used)
    bool dirty = false;
  };
  // line % sets; a mask when the sets are a power of two (tpuv4: 2048).
  uint64_t setOf(uint64_t line) const { return m_set_mask != 0 ? line & m_set_mask : line % m_sets; }
  const Way* find(uint64_t line) const;  // nullptr when absent

  uint64_t m_sets;
  uint64_t m_ways;
  uint64_t m_set_mask;     // sets - 1 for a power of two, else 0
  uint64_t m_clock = 0;    // access count
  std::vector<Way> m_way;  // set-major: set s holds m_way[s * ways .. (s + 1) * ways)
};

// Inline: the cache model calls it once per line of every transfer.
inline CmemLookup CmemTags::access(uint64_t line, bool write) {
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

}  // namespace tpusim
