// The closed form of array_timing.hpp on hand-worked cases (docs/mxu.md).
#include "sim/mxu/array_timing.hpp"

#include <gtest/gtest.h>

#include "sim/common/error.hpp"

namespace tpusim {
namespace {

ArrayConfig array(uint64_t rows, uint64_t cols, Dataflow dataflow = Dataflow::kWeightStationary,
                  bool double_buffered = true) {
  return ArrayConfig{rows, cols, dataflow, double_buffered};
}

uint64_t cycles(const ArrayConfig& a, uint64_t m, uint64_t k, uint64_t n, uint64_t passes = 1) {
  return arrayTiming(a, MatmulShape{m, k, n, passes}).cycles;
}

TEST(ArrayTiming, OneFold) {
  // M=K=N=128: 1 fold. 128 load + (128 stream + 127 fill + 127 drain) = 510
  const ArrayTiming t = arrayTiming(array(128, 128), {128, 128, 128, 1});
  EXPECT_EQ(t.folds, 1u);
  EXPECT_EQ(t.cycles, 510u);
  EXPECT_EQ(t.macs, 128u * 128 * 128);
  // 128 streamed + 128 waiting for the first tile + 254 fill and drain
  EXPECT_EQ(t.stream_cycles, 128u);
  EXPECT_EQ(t.load_stall_cycles, 128u);
  EXPECT_EQ(t.fill_drain_cycles, 254u);
}

TEST(ArrayTiming, StreamsLongerThanTheWeightLoadHideIt) {
  // M=1024, K=256, N=384: F = 2 * 3 = 6 folds, g = max(1024, 128) = 1024.
  // 128 + 5 * 1024 + (1024 + 128 + 128 - 2) = 128 + 5120 + 1278 = 6526
  EXPECT_EQ(cycles(array(128, 128), 1024, 256, 384), 6526u);
}

TEST(ArrayTiming, ShortStreamsAreBoundByWeightLoads) {
  // M=32 < R=128, K=784, N=128: F = 7 folds, each waiting for the next load.
  // 128 + 6 * 128 + (32 + 128 + 128 - 2) = 128 + 768 + 286 = 1182
  const ArrayTiming t = arrayTiming(array(128, 128), {32, 784, 128, 1});
  EXPECT_EQ(t.cycles, 1182u);
  // stall: 128 for the first tile + 6 x (128 - 32) = 704; stream 7 x 32 = 224; 254 fill/drain
  EXPECT_EQ(t.load_stall_cycles, 704u);
  EXPECT_EQ(t.stream_cycles, 224u);
  EXPECT_EQ(t.fill_drain_cycles, 254u);
}

TEST(ArrayTiming, ASlowFeedStretchesTheStreamNotTheSkew) {
  // Feed interval 2 (each vector converted on its way in): M=256 rows enter at 0, 2, ..., 510
  // after the 128-cycle load; the last leaves after the skew, 128 + 510 + 128 + 128 - 1 = 893.
  const ArrayTiming t = arrayTiming(array(128, 128), {256, 128, 128, 1, 2});
  EXPECT_EQ(t.cycles, 893u);
  EXPECT_EQ(t.stream_cycles, 512u);
  EXPECT_EQ(t.load_stall_cycles, 128u);
  EXPECT_EQ(t.fill_drain_cycles, 253u);
  EXPECT_EQ(cycles(array(128, 128), 256, 128, 128), 638u);  // interval 1: 128 + 256 + 254
}

TEST(ArrayTiming, ASlowFeedHidesUnderWeightLoadsThatTakeLonger) {
  // M=32 at interval 2 holds the edge 64 cycles, still under the 128-cycle loads: only the
  // last fold's later entries show, 1182 + 31 = 1213 (ShortStreamsAreBoundByWeightLoads).
  EXPECT_EQ(arrayTiming(array(128, 128), {32, 784, 128, 1, 2}).cycles, 1213u);
  // Output stationary, single-buffered: g = (L - 1) f + R; K=20 streams at interval 3:
  // 2 folds (M=16 on 8 rows), 57 + 8 = 65 apart; the last ends 65 + 57 + 16 + 8 - 1 = 145.
  EXPECT_EQ(arrayTiming(array(8, 8, Dataflow::kOutputStationary, false), {16, 20, 8, 1, 3}).cycles, 145u);
}

TEST(ArrayTiming, AFeedIntervalOfZeroOrAboveTheRowsIsAnError) {
  EXPECT_THROW(arrayTiming(array(128, 128), {8, 8, 8, 1, 0}), Error);
  try {
    arrayTiming(array(8, 8), {8, 8, 8, 1, 9});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidConfig);
    EXPECT_NE(std::string(e.what()).find("feed interval of 9 cycles"), std::string::npos) << e.what();
  }
}

TEST(ArrayTiming, AShortRowTileCostsAFullFold) {
  // K=129 needs 2 row tiles; the second (1 row) still takes a whole fold: partial
  // sums cross all 128 rows. 128 + 128 + (128 + 128 + 128 - 2) = 638
  EXPECT_EQ(arrayTiming(array(128, 128), {128, 129, 128, 1}).folds, 2u);
  EXPECT_EQ(cycles(array(128, 128), 128, 129, 128), 638u);
}

TEST(ArrayTiming, ANarrowLastColumnBlockDrainsSooner) {
  // N=130: blocks of 128 and 2 columns. Fold 1 starts at 128 + 128 = 256 and
  // ends at 256 + 128 + 128 + 2 - 2 = 512; fold 0 ends at 128 + 382 = 510.
  EXPECT_EQ(cycles(array(128, 128), 128, 128, 130), 512u);
}

TEST(ArrayTiming, AWideEarlierFoldCanFinishLast) {
  // 8 x 64 array, M=1, K=8, N=65: folds of 64 and 1 columns, g = max(1, 8) = 8.
  // fold 0: 8 + 1 + 8 + 64 - 2 = 79; fold 1: 16 + 1 + 8 + 1 - 2 = 24. The instruction takes 79.
  EXPECT_EQ(cycles(array(8, 64), 1, 8, 65), 79u);
}

TEST(ArrayTiming, NonSquareArray) {
  // 8 x 16 array, M=4, K=8, N=16: one fold. 8 + (4 + 8 + 16 - 2) = 34
  EXPECT_EQ(cycles(array(8, 16), 4, 8, 16), 34u);
}

TEST(ArrayTiming, SingleBufferedWeightsLoadBetweenFolds) {
  // M=K=N=256: 4 folds. Double: g = 256: 128 + 3 * 256 + 510 = 1406.
  // Single: g = 256 + 128 = 384: 128 + 3 * 384 + 510 = 1790.
  EXPECT_EQ(cycles(array(128, 128), 256, 256, 256), 1406u);
  EXPECT_EQ(cycles(array(128, 128, Dataflow::kWeightStationary, false), 256, 256, 256), 1790u);
}

TEST(ArrayTiming, InputStationaryStreamsTheRhsColumns) {
  // IS holds lhs^T: M=32, K=256, N=1024 streams L = 1024 through F = 2 x 1 folds.
  // Single-buffered g = 1024 + 128: 128 + 1152 + (1024 + 128 + 32 - 2) = 2462, where
  // WS streams L = 32 through 16 folds: 128 + 15 * 160 + (32 + 128 + 128 - 2) = 2814.
  EXPECT_EQ(cycles(array(128, 128, Dataflow::kInputStationary, false), 32, 256, 1024), 2462u);
  EXPECT_EQ(cycles(array(128, 128, Dataflow::kWeightStationary, false), 32, 256, 1024), 2814u);
}

TEST(ArrayTiming, OutputStationaryStreamsK) {
  // One fold, M=K=N=128: no preload; the last column drains in cycles
  // 128 + 128 + 127 - 1 = 382 to 509: 0 + 128 + 256 + 128 - 2 = 510.
  EXPECT_EQ(cycles(array(128, 128, Dataflow::kOutputStationary), 128, 128, 128), 510u);
  // M=N=256, K=64: 4 folds, g = max(64, 128) = 128: 384 + 64 + 256 + 128 - 2 = 830;
  // single-buffered g = 64 + 128 - 1 = 191: 573 + 64 + 256 + 128 - 2 = 1019.
  EXPECT_EQ(cycles(array(128, 128, Dataflow::kOutputStationary), 256, 64, 256), 830u);
  EXPECT_EQ(cycles(array(128, 128, Dataflow::kOutputStationary, false), 256, 64, 256), 1019u);
  // The same on WS: 2 folds of L = 256: 128 + 256 + (256 + 128 + 128 - 2) = 894.
  EXPECT_EQ(cycles(array(128, 128), 256, 64, 256), 894u);
}

TEST(ArrayTiming, PassesRepeatTheSweep) {
  // f32 HIGHEST: 6 passes of M=K=N=128 are 6 folds: 128 + 5 * 128 + 382 = 1150.
  const ArrayTiming t = arrayTiming(array(128, 128), {128, 128, 128, 6});
  EXPECT_EQ(t.folds, 6u);
  EXPECT_EQ(t.cycles, 1150u);
  EXPECT_EQ(t.macs, 6u * 128 * 128 * 128);
}

TEST(ArrayTiming, BadArraysAndShapesAreErrors) {
  try {
    arrayTiming(array(2048, 128), {1, 1, 1, 1});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidConfig);
    EXPECT_STREQ(e.what(), "an MXU of 2048 x 128 PEs is not supported: rows must be 1 to 1024");
  }
  EXPECT_THROW(arrayTiming(array(128, 0), {1, 1, 1, 1}), Error);
  try {
    arrayTiming(array(128, 128), {4, 0, 4, 1});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_STREQ(e.what(), "a matmul of 4 x 0 x 4 in 1 passes is empty: every dimension must be at least 1");
  }
  EXPECT_THROW(parseDataflow("row_stationary"), Error);
}

TEST(ArrayTiming, Int8SweepsKAtThePresetsRate) {
  // M=K=N=256 on 128x128 WS. bf16: 2 row x 2 column blocks = 4 folds, g = 256:
  // 128 + 3 * 256 + (256 + 128 + 128 - 2) = 1406.
  ArrayConfig a = array(128, 128);
  EXPECT_EQ(arrayTiming(a, sweptShape(a, {256, 256, 256, 1}, true)).cycles, 1406u);  // rate 1: as bf16
  EXPECT_EQ(arrayTiming(a, sweptShape(a, {256, 256, 256, 1}, false)).cycles, 1406u);
  // 2 int8 MACs per PE: K swept as 128, 1 row x 2 column blocks = 2 folds:
  // 128 + 256 + (256 + 128 + 128 - 2) = 894.
  a.int8_macs_per_pe = 2;
  const MatmulShape swept = sweptShape(a, {256, 256, 256, 1}, true);
  EXPECT_EQ(swept.k, 128u);
  EXPECT_EQ(arrayTiming(a, swept).cycles, 894u);
  EXPECT_EQ(arrayTiming(a, sweptShape(a, {256, 256, 256, 1}, false)).cycles, 1406u);  // bf16 unchanged
  EXPECT_EQ(sweptShape(a, {1, 257, 1, 1}, true).k, 129u);                             // an odd K rounds up
}

}  // namespace
}  // namespace tpusim
