// The lowering's per-buffer access lists (frontend/lower/access_list.hpp) find exactly the
// accesses a scan of every one finds, in the same order, whether their ranges ascend or not.
#include "frontend/lower/access_list.hpp"

#include <random>

#include <gtest/gtest.h>

namespace tpusim::lowering {
namespace {

std::vector<uint32_t> scanned(const std::vector<Access>& accesses, ByteRange range) {
  std::vector<uint32_t> out;
  for (const Access& access : accesses) {
    if (access.range.overlaps(range)) out.push_back(access.instruction);
  }
  return out;
}

std::vector<uint32_t> searched(const AccessList& list, ByteRange range) {
  std::vector<uint32_t> out;
  list.appendOverlapping(range, out);
  return out;
}

ByteRange randomRange(std::mt19937_64& rng, uint64_t extent) {
  const uint64_t a = rng() % extent, b = rng() % extent;
  return {std::min(a, b), std::max(a, b) + (rng() % 4 == 0 ? 0 : 1)};  // some empty ranges
}

TEST(AccessList, FindsWhatAScanFindsOnTiledAndScatteredAccesses) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    const uint64_t extent = 1 + rng() % 1000;
    std::vector<Access> accesses;
    AccessList list;
    const bool tiled = trial % 2 == 0;
    uint64_t at = 0;
    const size_t count = rng() % 40;
    for (size_t i = 0; i < count; ++i) {
      ByteRange range = randomRange(rng, extent);
      if (tiled) {  // ascending tiles, some overlapping the previous one, some empty
        const uint64_t begin = at + rng() % 8;
        range = {begin, begin + rng() % 16};
        at = begin + (rng() % 3 == 0 ? 0 : range.end - begin);
      }
      const Access access{range, static_cast<uint32_t>(i)};
      accesses.push_back(access);
      list.push_back(access);
    }
    if (count > 0 && trial % 5 == 0) {  // a removal keeps what is left searchable
      accesses.pop_back();
      list.pop_back();
    }
    for (int query = 0; query < 50; ++query) {
      const ByteRange range = randomRange(rng, extent + 40);
      EXPECT_EQ(searched(list, range), scanned(accesses, range)) << "trial " << trial;
    }
  }
}

TEST(AccessList, AssignAndClearStartOver) {
  AccessList list;
  list.push_back({{100, 200}, 1});
  list.push_back({{0, 50}, 2});  // out of order: every access is checked from here on
  EXPECT_EQ(searched(list, {40, 150}), (std::vector<uint32_t>{1, 2}));
  list.assign({{{0, 10}, 3}, {{10, 20}, 4}, {{20, 30}, 5}});
  EXPECT_EQ(searched(list, {15, 25}), (std::vector<uint32_t>{4, 5}));
  EXPECT_EQ(searched(list, {30, 40}), (std::vector<uint32_t>{}));
  list.clear();
  EXPECT_EQ(searched(list, {0, 100}), (std::vector<uint32_t>{}));
}

}  // namespace
}  // namespace tpusim::lowering
