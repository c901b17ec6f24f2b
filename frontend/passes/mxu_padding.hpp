// Layout and padding to the MXU tile: each matmul and convolution is a GEMM
// [M, K] x [K, N] whose K and N are held in the rows x cols array a tile at a time,
// so K pads to a multiple of the rows and N to one of the columns (M streams and does
// not pad). The pass records the padded dimensions (Op::mxu_padded); the mapping
// efficiency M*K*N / (M*K'*N') is the fraction of the array's MACs doing useful work.
#pragma once

#include <array>
#include <cstdint>

#include "frontend/ir/graph.hpp"

namespace tpusim {

// The GEMM an MXU op runs: per group (convolutions) or over the folded batch (matmuls).
std::array<int64_t, 3> gemmShapeOf(const ir::Graph& graph, const ir::Op& op);
ir::Graph padToMxuTile(const ir::Graph& graph, int64_t rows, int64_t cols);

}  // namespace tpusim
