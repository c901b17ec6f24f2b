// Tile sizes that fit an op's working set into a TensorCore's VMEM.
//
// Streamed operands are double-buffered: while the units compute on one tile
// the DMA engines fill the other, so each streamed tile may use at most half
// of what is left after the resident operands.
#pragma once

#include <cstdint>
#include <string>

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
  uint64_t vmem_bytes = 0;  // the most VMEM the op holds at once on the core
  uint64_t hbm_bytes = 0;   // bytes the core moves (lhs and rhs loads, out stores)
};

// Chooses the blocking with the fewest HBM bytes that fits `vmem_bytes`; tile
// edges are multiples of `align` (the MXU's edge) unless a dimension is smaller.
// Throws Error (kResource) when not even an align x align tile fits.
GemmTiling chooseGemmTiling(const GemmShape& shape, uint64_t vmem_bytes, uint64_t align);

// Rows per tile when `resident` bytes stay in VMEM and each row streams
// `row_bytes` (double-buffered); all rows when they fit at once. Throws Error
// (kResource) naming `what` when not even one row fits.
uint64_t rowsPerTile(uint64_t rows, uint64_t row_bytes, uint64_t resident, uint64_t vmem_bytes,
                     const std::string& what);

}  // namespace tpusim
