// What a matmul instruction asks of one MXU, and how the array is built.
//
// The problem out[m, n] = lhs[m, k] x rhs[k, n], run `passes` times (an f32
// matmul is 1, 3 or 6 bf16 passes, each a full sweep of the array), maps onto
// an R x C array in one of three dataflows (docs/mxu.md):
//   weight stationary  a [k, n] tile of rhs sits in the PEs; lhs rows stream through
//   input stationary   a [k, m] tile of lhs^T sits in the PEs; rhs columns stream through
//   output stationary  each PE accumulates one out[m, n]; lhs and rhs stream along k
#pragma once

#include <cstdint>
#include <string>

#include "configs/hardware.pb.h"
#include "sim/common/dataflow.hpp"

namespace tpusim {

const char* dataflowName(Dataflow dataflow);
// "weight_stationary", "input_stationary" or "output_stationary"; anything else is an invalid-config error.
Dataflow parseDataflow(const std::string& name);

struct ArrayConfig {
  uint64_t rows = 128;
  uint64_t cols = 128;
  Dataflow dataflow = Dataflow::kWeightStationary;
  // Two registers per PE: weights (WS, IS) or results (OS) of the next fold move in
  // (or out) while the current fold computes. Off is the classic single-register schedule.
  bool double_buffered = true;
  // int8 x int8 MACs a PE does per cycle, on consecutive k (mxu.int8_macs_per_pe; bf16 is 1).
  uint64_t int8_macs_per_pe = 1;
};

struct MatmulShape {
  uint64_t m = 0, k = 0, n = 0;
  uint64_t passes = 1;
  // Cycles between vectors entering the array's edges: 1 when the operands reach the array
  // in its own type, more when each vector is converted on its way in (an f16 operand on an
  // MXU without an f16 path: mxu.f16_feed_interval_cycles). At most the array's rows.
  uint64_t feed_interval = 1;
};

inline constexpr uint64_t kMaxArrayEdge = 1024;

// Throws Error (kInvalidConfig) for an array edge of 0 or above kMaxArrayEdge.
void checkArray(const ArrayConfig& array);
// Throws Error (kInvalidInput) for a zero dimension, zero passes or a zero feed interval.
void checkShape(const MatmulShape& shape);
// Throws Error (kInvalidConfig) for a feed interval above the array's rows.
void checkFeed(const ArrayConfig& array, const MatmulShape& shape);

// The problem seen from the array: `stream` vectors enter per fold; the
// stationary (WS, IS) or accumulated (OS) tile spans `along_rows` x `along_cols`.
struct FoldGeometry {
  uint64_t stream;      // WS: m, IS: n, OS: k
  uint64_t along_rows;  // WS, IS: k, OS: m
  uint64_t along_cols;  // WS: n, IS: m, OS: n
  uint64_t row_blocks;  // ceil(along_rows / R)
  uint64_t col_blocks;  // ceil(along_cols / C)
  uint64_t last_cols;   // columns used by the last column block
  uint64_t folds;       // passes x row_blocks x col_blocks
};
FoldGeometry foldGeometry(const ArrayConfig& array, const MatmulShape& shape);

// What the array sweeps for an instruction: an int8 x int8 product whose PEs each take
// int8_macs_per_pe pairs along k per cycle runs as the product with k / int8_macs_per_pe
// (rounded up) would, in every dataflow; other dtypes as given.
MatmulShape sweptShape(const ArrayConfig& array, MatmulShape shape, bool int8);

// The array of a preset (mxu.rows, mxu.cols, mxu.dataflow, mxu.register_buffering,
// mxu.int8_macs_per_pe).
ArrayConfig arrayConfigOf(const config::HardwareConfig& hw);

}  // namespace tpusim
