#include "sim/common/stats.hpp"

#include <gtest/gtest.h>

#include "sim/common/error.hpp"

namespace tpusim {
namespace {

TEST(Stats, CountersKeepUnitDescriptionAndOrder) {
  StatsRegistry stats;
  Counter& busy = stats.counter("u.busy_cycles", "cycles", "cycles busy");
  Counter& total = stats.counter("u.total", "cycles", "cycles in all");
  stats.formula("u.utilization", "fraction", "busy / total",
                [&] { return static_cast<double>(busy.value()) / static_cast<double>(total.value()); });
  busy.add(25);
  total.add(100);
  ASSERT_EQ(stats.entries().size(), 3u);
  EXPECT_EQ(stats.entries()[0].name, "u.busy_cycles");
  EXPECT_EQ(stats.entries()[0].unit, "cycles");
  EXPECT_EQ(stats.entries()[0].description, "cycles busy");
  EXPECT_DOUBLE_EQ(stats.value("u.utilization"), 0.25);
  EXPECT_TRUE(stats.entries()[2].is_formula);
}

TEST(Stats, CounterReferencesStayValidAsTheRegistryGrows) {
  StatsRegistry stats;
  Counter& first = stats.counter("c0", "count", "first");
  for (int i = 1; i < 1000; ++i) {
    std::string name = "c";
    name += std::to_string(i);
    stats.counter(name, "count", "more");
  }
  first.add(7);
  EXPECT_DOUBLE_EQ(stats.value("c0"), 7);
}

TEST(Stats, DuplicateAndUnknownNamesAreErrors) {
  StatsRegistry stats;
  stats.counter("x", "count", "x");
  EXPECT_THROW(stats.counter("x", "count", "again"), Error);
  EXPECT_THROW(stats.value("y"), Error);
  EXPECT_THROW(stats.at("y"), Error);  // a misspelt name is an error, never 0
  EXPECT_EQ(stats.find("y"), nullptr);
}

TEST(Stats, UnitsSayWhatTheyAreOnce) {
  StatsRegistry stats;
  stats.unit("chip0.core0.dma0", UnitKind::kDma);
  stats.unit("chip0.hbm", UnitKind::kHbm);
  EXPECT_EQ(stats.kindOf("chip0.core0.dma0"), UnitKind::kDma);
  EXPECT_EQ(stats.kindOf("chip0.hbm"), UnitKind::kHbm);
  EXPECT_EQ(stats.kindOf("chip0.cmem"), std::nullopt);
  ASSERT_EQ(stats.units().size(), 2u);
  EXPECT_EQ(stats.units()[0].name, "chip0.core0.dma0");  // in declaration order
  EXPECT_STREQ(unitKindName(stats.units()[1].kind), "hbm");
  EXPECT_THROW(stats.unit("chip0.hbm", UnitKind::kHbm), Error);
}

}  // namespace
}  // namespace tpusim
