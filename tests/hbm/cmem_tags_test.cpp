// CMEM's tags: LRU replacement in one set worked by hand, dirty lines, and the
// parameter checks of cmem_config.
#include <gtest/gtest.h>

#include "sim/common/error.hpp"
#include "sim/common/params.hpp"
#include "sim/hbm/cmem_config.hpp"
#include "sim/hbm/cmem_tags.hpp"

namespace tpusim {
namespace {

TEST(CmemTags, OverflowingOneSetEvictsInLruOrder) {
  // 4 sets of 3 ways: lines 0, 4, 8, 12, 16 all map to set 0.
  CmemTags tags(4, 3);
  EXPECT_FALSE(tags.access(0, false).hit);   // set: 0
  EXPECT_FALSE(tags.access(4, false).hit);   // 0 4
  EXPECT_FALSE(tags.access(8, false).hit);   // 0 4 8 (LRU first)
  EXPECT_TRUE(tags.access(0, false).hit);    // 4 8 0
  EXPECT_FALSE(tags.access(12, false).hit);  // evicts 4: 8 0 12
  EXPECT_FALSE(tags.contains(4));
  EXPECT_TRUE(tags.access(8, false).hit);    // 0 12 8
  EXPECT_FALSE(tags.access(16, false).hit);  // evicts 0: 12 8 16
  EXPECT_FALSE(tags.contains(0));
  EXPECT_TRUE(tags.contains(12) && tags.contains(8) && tags.contains(16));
  EXPECT_FALSE(tags.access(1, false).hit);  // set 1 is apart: nothing of set 0 leaves
  EXPECT_TRUE(tags.contains(12) && tags.contains(8) && tags.contains(16));
}

TEST(CmemTags, WritesDirtyLinesAndEvictionsReportThem) {
  CmemTags tags(1, 2);
  const CmemLookup write = tags.access(7, true);
  EXPECT_FALSE(write.hit);
  EXPECT_TRUE(write.dirtied);
  EXPECT_FALSE(tags.access(7, true).dirtied);  // already dirty
  EXPECT_TRUE(tags.dirty(7));
  tags.access(9, false);
  const CmemLookup evict = tags.access(11, false);  // 7 is LRU and dirty
  EXPECT_TRUE(evict.evicted_dirty);
  EXPECT_EQ(evict.evicted_line, 7u);
  const CmemLookup clean = tags.access(13, false);  // 9 is LRU and clean
  EXPECT_FALSE(clean.evicted_dirty);
}

std::string errorOf(HardwareParams hw) {
  try {
    cmemGeometryOf(hw.config());
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kInvalidConfig);
    return error.what();
  }
  return "";
}

TEST(CmemConfig, Tpuv4GeometryIs32kLinesIn2048Sets) {
  HardwareParams hw = HardwareParams::load("tpuv4");
  hw.set("cmem.mode", "cache");
  const CmemGeometry geometry = cmemGeometryOf(hw.config());
  EXPECT_EQ(geometry.capacity_bytes, 128u << 20);
  EXPECT_EQ(geometry.lines, 32768u);  // 128 MiB / 4 KiB
  EXPECT_EQ(geometry.sets, 2048u);    // / 16 ways
  EXPECT_EQ(cmemGeometryOf(HardwareParams::load("tpuv4").config()).mode, CmemMode::kOff);
}

TEST(CmemConfig, BadCombinationsAreOneLineErrors) {
  HardwareParams none = HardwareParams::load("tpuv5e");
  none.set("cmem.mode", "cache");
  EXPECT_EQ(errorOf(none), "cmem.mode=cache needs cmem.capacity_mib > 0 (tpuv5e sets 0: no CMEM)");
  HardwareParams partial = HardwareParams::load("tpuv4");
  partial.set("cmem.mode", "software");
  partial.set("cmem.capacity_mib", "1.5");
  partial.set("cmem.line_bytes", "1000000");
  EXPECT_EQ(errorOf(partial),
            "cmem.capacity_mib 1.5 (1572864 bytes) is not a whole number of cmem.line_bytes 1000000 lines");
  HardwareParams ways = HardwareParams::load("tpuv4");
  ways.set("cmem.mode", "cache");
  ways.set("cmem.associativity", "3");
  EXPECT_EQ(errorOf(ways),
            "cmem.associativity 3 does not divide the 32768 lines of CMEM (cmem.capacity_mib / cmem.line_bytes)");
  // Software mode has no sets: any associativity goes.
  ways.set("cmem.mode", "software");
  EXPECT_EQ(errorOf(ways), "");
  // Mode off reads nothing else.
  none.set("cmem.mode", "off");
  none.set("cmem.line_bytes", "3");
  EXPECT_EQ(errorOf(none), "");
}

TEST(CmemConfig, SchemaBoundsRejectZeroBandwidthAndUnknownModes) {
  HardwareParams hw = HardwareParams::load("tpuv4");
  const auto message = [&](const char* key, const char* value) {
    try {
      hw.set(key, value);
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  EXPECT_NE(message("cmem.bandwidth_gbps", "0").find("cmem.bandwidth_gbps must be > 0"), std::string::npos);
  EXPECT_NE(message("cmem.line_bytes", "0").find("cmem.line_bytes must be > 0"), std::string::npos);
  EXPECT_NE(message("cmem.associativity", "0").find("cmem.associativity must be > 0"), std::string::npos);
  EXPECT_NE(message("cmem.hit_latency_ns", "-1").find("cmem.hit_latency_ns must be >= 0"), std::string::npos);
  EXPECT_NE(message("cmem.mode", "scratchpad").find("must be one of off, cache, software"), std::string::npos);
}

}  // namespace
}  // namespace tpusim
