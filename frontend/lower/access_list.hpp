// The byte ranges of an HBM buffer that the lowering's loads and stores touch, kept per
// buffer to find the dependencies between them (frontend/lower/lowerer.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tpusim::lowering {

struct ByteRange {
  uint64_t begin = 0;
  uint64_t end = 0;
  bool overlaps(const ByteRange& other) const { return begin < other.end && other.begin < end; }
};

// An instruction that reads or writes `range` of a buffer.
struct Access {
  ByteRange range;
  uint32_t instruction;
};

// One HBM buffer's accesses in emission order, searched by byte range. While their ranges
// ascend (begins and ends both non-decreasing, as a tiled op's stores and loads do), a
// binary search skips those that end before the range, and the scan stops at the first
// that begins after it; otherwise every access is checked.
class AccessList {
 public:
  void push_back(const Access& access) {
    if (!m_items.empty() &&
        (access.range.begin < m_items.back().range.begin || access.range.end < m_items.back().range.end)) {
      m_ascending = false;
    }
    m_items.push_back(access);
    ++m_version;
  }
  void pop_back() {
    m_items.pop_back();
    ++m_version;
  }
  void clear() {
    m_items.clear();
    m_ascending = true;
    ++m_version;
  }
  void assign(std::vector<Access> items) {
    clear();
    for (const Access& access : items) push_back(access);
  }
  // Changes with every change to the list: equal versions, the same accesses.
  uint64_t version() const { return m_version; }
  std::vector<Access>::const_iterator begin() const { return m_items.begin(); }
  std::vector<Access>::const_iterator end() const { return m_items.end(); }
  // Appends the instruction of each access whose bytes overlap `range`, in emission order.
  void appendOverlapping(ByteRange range, std::vector<uint32_t>& out) const {
    auto it = m_items.begin();
    if (m_ascending) {
      it = std::partition_point(m_items.begin(), m_items.end(),
                                [&](const Access& access) { return access.range.end <= range.begin; });
    }
    for (; it != m_items.end(); ++it) {
      if (m_ascending && it->range.begin >= range.end) break;
      if (it->range.overlaps(range)) out.push_back(it->instruction);
    }
  }

 private:
  std::vector<Access> m_items;
  bool m_ascending = true;
  uint64_t m_version = 0;
};

}  // namespace tpusim::lowering
