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
  bool dirtied = false;         // a write made a clean (or new) line dirty
  bool evicted_dirty = false;   // a miss replaced a dirty line, which must be written back
  uint64_t evicted_line = 0;    // its line address
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
  uint64_t find(uint64_t line) const;  // the way index, or kEmpty

  uint64_t m_sets;
  uint64_t m_ways;
  uint64_t m_clock = 0;          // access count: the time stamp of the last use
  std::vector<uint64_t> m_tag;   // per way of each set, set-major: the line held, or kEmpty
  std::vector<uint64_t> m_used;  // its last use (0: never)
  std::vector<uint8_t> m_dirty;
};

}  // namespace tpusim
