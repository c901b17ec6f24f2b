#include "sim/mxu/ws_timing.hpp"

#include <gtest/gtest.h>

namespace tpusim {
namespace {

constexpr MxuShape k128{128, 128};

TEST(WsTiming, OneFold) {
  // M=K=N=128: 1 fold. 128 load + 0 + (128 stream + 127 fill + 127 drain) = 510
  const WsTiming t = weightStationaryTiming(128, 128, 128, k128);
  EXPECT_EQ(t.folds, 1u);
  EXPECT_EQ(t.cycles, 510u);
  EXPECT_EQ(t.macs, 128u * 128 * 128);
}

TEST(WsTiming, ManyFoldsStreamingLongerThanWeightLoad) {
  // M=1024, K=256, N=384: F = 2 * 3 = 6 folds, max(M, R) = 1024.
  // 128 + 5 * 1024 + (1024 + 128 + 128 - 2) = 128 + 5120 + 1278 = 6526
  EXPECT_EQ(weightStationaryTiming(1024, 256, 384, k128).cycles, 6526u);
}

TEST(WsTiming, ShortStreamsAreBoundByWeightLoads) {
  // M=32 < R=128, K=784, N=128: F = ceil(784/128) = 7 folds, each bound by the next load.
  // 128 + 6 * 128 + (32 + 128 + 128 - 2) = 128 + 768 + 286 = 1182
  EXPECT_EQ(weightStationaryTiming(32, 784, 128, k128).cycles, 1182u);
}

TEST(WsTiming, EdgeTilesCostAFullFold) {
  // K=129 needs 2 row tiles: F = 2; the partial tile still takes a full fold.
  EXPECT_EQ(weightStationaryTiming(128, 129, 128, k128).folds, 2u);
  EXPECT_EQ(weightStationaryTiming(128, 129, 128, k128).cycles, 128u + 128 + 382);
}

TEST(WsTiming, NonSquareArray) {
  // 8 x 16 array, M=4, K=8, N=16: F=1. 8 + (4 + 8 + 16 - 2) = 34
  EXPECT_EQ(weightStationaryTiming(4, 8, 16, MxuShape{8, 16}).cycles, 34u);
}

}  // namespace
}  // namespace tpusim
