#include "reference/op_timing.hpp"

#include <gtest/gtest.h>

#include "sim/common/error.hpp"

namespace tpusim::reference {
namespace {

TEST(OpTiming, MedianOfOddAndEvenCounts) {
  EXPECT_EQ(medianOf({3.0, 1.0, 2.0}), 2.0);
  EXPECT_EQ(medianOf({4.0, 1.0, 3.0, 2.0}), 2.5);  // (2 + 3) / 2
  EXPECT_EQ(medianOf({100.0, 1.0, 1.0}), 1.0);     // one slow repeat does not move it
  EXPECT_EQ(medianOf({}), 0.0);
}

TEST(OpTiming, BadOptionsAreConfigErrors) {
  EXPECT_NO_THROW(checkTimingOptions({0, 1}));
  for (const TimingOptions bad : {TimingOptions{-1, 5}, TimingOptions{1, 0}}) {
    try {
      checkTimingOptions(bad);
      FAIL() << "accepted warmup " << bad.warmup << " repeats " << bad.repeats;
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::kInvalidConfig);
    }
  }
}

}  // namespace
}  // namespace tpusim::reference
