// The compiler's cost model for vector-unit ops: vector ALU operations per
// element, counted as the passes an unfused TPU kernel makes over the data.
// These are estimates of the compiler, not hardware parameters; the vector
// unit's throughput (lanes x sublanes) and latency come from the preset.
#pragma once

#include <cstdint>

#include "frontend/ir/graph.hpp"

namespace tpusim {

inline uint32_t vectorOpsPerElement(ir::OpType type) {
  switch (type) {
    case ir::OpType::kAdd: return 1;                  // add
    case ir::OpType::kRelu: return 1;                 // max with 0
    case ir::OpType::kReluGrad: return 2;             // compare, select
    case ir::OpType::kReduceSumTo: return 1;          // add into the accumulator
    case ir::OpType::kSub: return 1;                  // subtract
    case ir::OpType::kMul: return 1;                  // multiply
    case ir::OpType::kDiv: return 2;                  // reciprocal estimate and multiply
    case ir::OpType::kScale: return 1;                // multiply by a scalar
    case ir::OpType::kSgdUpdate: return 2;            // multiply by the rate, subtract
    case ir::OpType::kSoftmaxCrossEntropy: return 6;  // row max, subtract, exp, row sum, log, pick label and mean
    case ir::OpType::kSoftmaxCrossEntropyGrad:
      return 7;                              // row max, subtract, exp, row sum, divide, subtract one-hot, scale
    case ir::OpType::kSoftmax: return 5;     // max, subtract, exp, sum, divide
    case ir::OpType::kLogSoftmax: return 5;  // max, subtract, exp, sum, log and subtract
    case ir::OpType::kNllLoss: return 2;     // gather the label's log-probability, weight and accumulate
    case ir::OpType::kUnary:
      return 4;  // a transcendental (tanh, erf, exp, ...) as a few ALU passes; abs and neg cost the same here
    case ir::OpType::kUnaryGrad: return 4;  // the derivative's few operations and the multiply by dy
    case ir::OpType::kTranspose: return 1;  // one pass through the transpose path
    case ir::OpType::kReduce: return 1;     // add into the accumulator (mean: one scale per output, not counted)
    case ir::OpType::kBroadcastTo:
    case ir::OpType::kConcat:
    case ir::OpType::kSlice:
    case ir::OpType::kSliceGrad: return 1;   // a copy
    case ir::OpType::kGatherGrad: return 1;  // add each gathered row into the zeroed table
    case ir::OpType::kWhere: return 1;       // select
    case ir::OpType::kCast: return 1;        // one conversion
    case ir::OpType::kPow:
    case ir::OpType::kPowGrad: return 4;  // exp and log on the vector unit, as a few passes
    case ir::OpType::kPool:
    case ir::OpType::kPoolGrad:
    case ir::OpType::kPoolArgmax: return 1;  // a compare or add per window element (elements count them)
    case ir::OpType::kConv:                  // MXU work (lowerConv)
    case ir::OpType::kConvGradInput:
    case ir::OpType::kConvGradWeight:
    case ir::OpType::kGather:  // DMA only (lowerGather)
    case ir::OpType::kMatMul:
    case ir::OpType::kReshape: break;
  }
  return 0;
}

}  // namespace tpusim
