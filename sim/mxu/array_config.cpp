#include "sim/mxu/array_config.hpp"

#include "sim/common/error.hpp"

namespace tpusim {

const char* dataflowName(Dataflow dataflow) {
  switch (dataflow) {
    case Dataflow::kWeightStationary: return "weight_stationary";
    case Dataflow::kInputStationary: return "input_stationary";
    case Dataflow::kOutputStationary: return "output_stationary";
  }
  return "?";
}

Dataflow parseDataflow(const std::string& name) {
  for (Dataflow dataflow : {Dataflow::kWeightStationary, Dataflow::kInputStationary, Dataflow::kOutputStationary}) {
    if (name == dataflowName(dataflow)) return dataflow;
  }
  throw Error(ErrorKind::kInvalidConfig,
              "unknown MXU dataflow '" + name + "' (choose weight_stationary, input_stationary or output_stationary)");
}

void checkArray(const ArrayConfig& array) {
  for (const auto& [edge, what] : {std::pair{array.rows, "rows"}, std::pair{array.cols, "columns"}}) {
    if (edge == 0 || edge > kMaxArrayEdge) {
      throw Error(ErrorKind::kInvalidConfig, "an MXU of " + std::to_string(array.rows) + " x " +
                                                 std::to_string(array.cols) + " PEs is not supported: " + what +
                                                 " must be 1 to " + std::to_string(kMaxArrayEdge));
    }
  }
}

void checkShape(const MatmulShape& shape) {
  if (shape.m == 0 || shape.k == 0 || shape.n == 0 || shape.passes == 0) {
    throw Error(ErrorKind::kInvalidInput, "a matmul of " + std::to_string(shape.m) + " x " + std::to_string(shape.k) +
                                              " x " + std::to_string(shape.n) + " in " + std::to_string(shape.passes) +
                                              " passes is empty: every dimension must be at least 1");
  }
  if (shape.feed_interval == 0) {
    throw Error(ErrorKind::kInvalidInput,
                "a matmul whose vectors enter the MXU every 0 cycles: the feed interval "
                "must be at least 1");
  }
}

void checkFeed(const ArrayConfig& array, const MatmulShape& shape) {
  if (shape.feed_interval > array.rows) {
    throw Error(ErrorKind::kInvalidConfig, "an MXU feed interval of " + std::to_string(shape.feed_interval) +
                                               " cycles is not supported on " + std::to_string(array.rows) +
                                               " PE rows: it must be at most the rows (a vector's wavefront "
                                               "would leave the array before the next enters)");
  }
}

FoldGeometry foldGeometry(const ArrayConfig& array, const MatmulShape& shape) {
  FoldGeometry g{};
  switch (array.dataflow) {
    case Dataflow::kWeightStationary: g.stream = shape.m, g.along_rows = shape.k, g.along_cols = shape.n; break;
    case Dataflow::kInputStationary: g.stream = shape.n, g.along_rows = shape.k, g.along_cols = shape.m; break;
    case Dataflow::kOutputStationary: g.stream = shape.k, g.along_rows = shape.m, g.along_cols = shape.n; break;
  }
  g.row_blocks = (g.along_rows + array.rows - 1) / array.rows;
  g.col_blocks = (g.along_cols + array.cols - 1) / array.cols;
  g.last_cols = g.along_cols - (g.col_blocks - 1) * array.cols;
  g.folds = shape.passes * g.row_blocks * g.col_blocks;
  return g;
}

ArrayConfig arrayConfigOf(const config::HardwareConfig& hw) {
  ArrayConfig array;
  array.rows = static_cast<uint64_t>(hw.mxu().rows());
  array.cols = static_cast<uint64_t>(hw.mxu().cols());
  array.dataflow = parseDataflow(hw.mxu().dataflow());
  array.double_buffered = hw.mxu().register_buffering() != "single";
  array.int8_macs_per_pe = static_cast<uint64_t>(hw.mxu().int8_macs_per_pe());
  return array;
}

MatmulShape sweptShape(const ArrayConfig& array, MatmulShape shape, bool int8) {
  if (int8) shape.k = (shape.k + array.int8_macs_per_pe - 1) / array.int8_macs_per_pe;
  return shape;
}

}  // namespace tpusim
