// The IR's matmuls and convolutions computed as the MXU computes them: as the
// GEMMs the compiler lowers them to (frontend/lower/lower_gemm.cpp), each
// through the MXU's numerics (sim/common/matmul_numerics.hpp: inputs rounded
// to their dtype or split into bf16 passes, sums in the array's order).
//   matmul       out = lhs x rhs per batch item
//   conv         y[N*OH*OW, M/g]          = im2col(x)[N*OH*OW, C/g*KH*KW] x w_g^T
//   input grad   cols[N*OH*OW, C/g*KH*KW] = dy[N*OH*OW, M/g] x w_g, then col2im adds
//                the columns into dx in increasing column order (in float)
//   weight grad  dw_g[M/g, C/g*KH*KW]     = dy^T[M/g, N*OH*OW] x im2col(x)
// Padding enters the GEMM as zeros, as it does in the array.
#pragma once

#include <span>
#include <vector>

#include "frontend/ir/graph.hpp"
#include "frontend/ir/tensor_value.hpp"
#include "sim/common/matmul_numerics.hpp"

namespace tpusim::reference {

// What the run's MXUs are: the dataflow and rows decide the summation order,
// the precision the passes of an f32 product. The dtypes come from each op.
struct MxuNumericsOptions {
  Dataflow dataflow = Dataflow::kWeightStationary;
  uint64_t rows = 128;
  numerics::MatmulPrecision precision = numerics::MatmulPrecision::kDefault;
};

// True for the op types the MXU computes (matmul, conv and its gradients) in a
// dtype it takes (f32, bf16, f16).
bool runsOnMxu(const ir::Op& op, DType dtype);
// True for an int8 x int8 matmul or convolution (--precision int8): its int32 sums are
// exact, so any summation order gives them; the executor computes it here always.
bool isInt8Product(const ir::Op& op, DType dtype);

// Fills `out` (zeros of the output's shape and dtype) with the op's value; an int8
// product's out is int32. Each GEMM's rows are split over `threads` threads; the
// bits do not depend on how many.
void mxuCompute(const ir::Op& op, const std::vector<const ir::TensorValue*>& inputs, ir::TensorValue& out,
                const MxuNumericsOptions& options, int threads = 1);

}  // namespace tpusim::reference
