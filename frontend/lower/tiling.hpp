// Tile sizes that fit an op's working set into a TensorCore's VMEM.
//
// Streamed operands are double-buffered: while the units compute on one tile
// the DMA engines fill the other, so each streamed tile may use at most half
// of what is left after the resident operands.
#pragma once

#include <cstdint>
#include <string>

#include "sim/mxu/array_timing.hpp"

namespace tpusim {

// One core's share of a GEMM out[m, n] = lhs[m, k] x rhs[k, n], element sizes in bytes.
// An element size may be fractional: a convolution's implicit-GEMM lhs is the image,
// smaller than the [m, k] patch matrix it stands for.
struct GemmShape {
  uint64_t m, k, n;
  double lhs_element, rhs_element, out_element;
};

// How a GEMM is blocked:
//   whole       one tile; every operand loaded once
//   rhs_resident  a block rhs [k, n_block] stays in VMEM while tiles lhs [m_tile, k] stream
//                 through it (n_block = n when the rhs fits; otherwise lhs is read once per block)
//   lhs_resident  the mirror image: a block lhs [m_tile, k] stays while tiles rhs [k, n_block]
//                 stream through it
//   k_split     out [m_tile, n_block] stays in VMEM accumulating while [m_tile, k_tile] and
//               [k_tile, n_block] tiles stream through
enum class GemmBlocking { kWhole, kRhsResident, kLhsResident, kKSplit };
const char* gemmBlockingName(GemmBlocking blocking);

struct GemmTiling {
  GemmBlocking blocking = GemmBlocking::kWhole;
  uint64_t m_tile = 0;
  uint64_t n_block = 0;
  uint64_t k_tile = 0;
  uint64_t vmem_bytes = 0;        // the most VMEM the op holds at once on the core
  uint64_t hbm_bytes = 0;         // bytes the core moves (lhs and rhs loads, out stores)
  uint64_t mxu_cycles = 0;        // with a cost model: the MXU cycles of all its tiles, edge tiles included
  uint64_t estimated_cycles = 0;  // with a cost model: the double-buffered pipeline's cycles
};

// What the compiler knows of one TensorCore to time a tiling: its MXUs (timed
// by the simulator's own closed form, sim/mxu/array_timing.hpp) and its share of
// HBM bandwidth.
struct GemmCostModel {
  ArrayConfig array;
  uint64_t mxus = 1;
  uint64_t passes = 1;             // bf16 passes per product (f32 precision)
  uint64_t feed_interval = 1;      // cycles between vectors entering the array (mxu.f16_feed_interval_cycles)
  uint64_t vector_width = 1024;    // elements the vector unit adds per cycle (lanes x sublanes)
  bool split_depth = false;        // may split K over the MXUs (weight gradients: chooseMxuSplit)
  bool int8 = false;               // int8 x int8: k swept array.int8_macs_per_pe at a time
  double hbm_bytes_per_cycle = 1;  // this core's share
};

// How one tile is spread over the core's MXUs: its columns (each MXU holds
// different weights), its rows (each streams different rows past the same
// weights) or its depth K (each MXU sums a share of K for the whole tile, and the
// vector unit adds the shares once the tile's last product is done), and which
// way round: out = lhs x rhs streams out's rows through the array, out^T =
// rhs^T x lhs^T its columns. The fastest of the six; `cycles` is the slowest
// piece's, plus, for a split of K, the vector unit's adds of the shares.
// K is split only where model.split_depth allows: a convolution's weight gradient,
// whose K is the batch's positions, as its cores split it (Lowerer::lowerConv). Matmuls
// keep K whole: split, the measured TPU v4 matmuls of 128 to 384 rows and columns with
// K of 384 to 1024 would run up to 20% faster than measured (docs/fidelity.md).
enum class MxuSplitAxis { kCols, kRows, kDepth };
struct MxuSplit {
  MxuSplitAxis axis = MxuSplitAxis::kCols;
  bool transposed = false;
  uint64_t pieces = 1;
  uint64_t cycles = 0;
};
MxuSplit chooseMxuSplit(uint64_t m, uint64_t k, uint64_t n, const GemmCostModel& model);

// Chooses a blocking that fits `vmem_bytes`: without a cost model the one with
// the fewest HBM bytes; with one, the fewest estimated cycles (max of transfer
// and MXU time, edge tiles timed exactly, plus resident-block reloads), then bytes.
// Tile edges are multiples of `align` (the MXU's edge) unless a dimension is
// smaller. Throws Error (kResource) when not even an align x align tile fits.
GemmTiling chooseGemmTiling(const GemmShape& shape, uint64_t vmem_bytes, uint64_t align,
                            const GemmCostModel* model = nullptr);

// Rows per tile when `resident` bytes stay in VMEM and each row streams
// `row_bytes` (double-buffered); all rows when they fit at once. With `stream_tile`
// (bytes, vmem.stream_tile_kib), no tile is larger than that (but for one row).
// Throws Error (kResource) naming `what` when not even one row fits.
uint64_t rowsPerTile(uint64_t rows, uint64_t row_bytes, uint64_t resident, uint64_t vmem_bytes, const std::string& what,
                     uint64_t stream_tile = 0);

}  // namespace tpusim
