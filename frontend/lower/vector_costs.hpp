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
    case ir::OpType::kMaximum:
    case ir::OpType::kMinimum: return 1;    // max or min
    case ir::OpType::kCompare: return 1;    // compare
    case ir::OpType::kAllReduce: return 1;  // one replica: a copy (a group of more is rejected when the graph is built)
    case ir::OpType::kPow:
    case ir::OpType::kPowGrad: return 4;  // exp and log on the vector unit, as a few passes
    case ir::OpType::kPool:
    case ir::OpType::kPoolGrad:
    case ir::OpType::kPoolArgmax: return 1;    // a compare or add per window element (elements count them)
    case ir::OpType::kMseLoss: return 3;       // subtract, square, accumulate (the mean: one scale, not counted)
    case ir::OpType::kMseLossGrad: return 2;   // subtract, multiply by 2 / elements
    case ir::OpType::kNllLossGrad: return 1;   // a zero or the label's weight, written per element
    case ir::OpType::kOptimizerUpdate: break;  // depends on the optimizer: optimizerOpsPerElement below
    case ir::OpType::kConv:                    // MXU work (lowerConv)
    case ir::OpType::kConvGradInput:
    case ir::OpType::kConvGradWeight:
    case ir::OpType::kGather:  // DMA only (lowerGather)
    case ir::OpType::kMatMul:
    case ir::OpType::kReshape: break;
  }
  return 0;
}

// OptimizerUpdate, per element of the tensor it writes. Coupled weight decay (L2) adds
// 2 (multiply w, add to g) wherever the gradient is read; scalars (the scheduled rate,
// Adam's bias correction, LARS's trust ratio) are per tensor and not counted.
//   SGD                 w - r g                            2
//   momentum velocity   mu v + c g                         3
//   momentum weight     w - r v                            2; Nesterov w - r (g + mu v): 4
//   Adam m              b1 m + (1 - b1) g                  3
//   Adam v              b2 v + (1 - b2) g^2                4
//   Adam weight         w - r' m / (sqrt(v) + eps)         9 (sqrt 4, as Unary; add 1; divide 2; scale 1;
//                                                            subtract 1); AdamW +2; post decay +1
//   Adagrad h           h + g^2                            2
//   Adagrad weight      w - r g / (sqrt(h) + eps)          9 (as Adam's weight)
//   LARS velocity       mu v + r trust g                   3
//   LARS weight         w - v                              1
//   step counter        step + 1                           1
inline uint32_t optimizerOpsPerElement(const ir::Op& op) {
  const ir::OptimizerConfig& c = op.optimizer;
  const uint32_t decay =
      c.weight_decay != 0 && !(c.kind == ir::OptimizerKind::kAdam && c.decoupled_weight_decay) ? 2 : 0;
  const bool state = op.update_target == ir::UpdateTarget::kFirstState;
  switch (op.update_target) {
    case ir::UpdateTarget::kStep: return 1;
    case ir::UpdateTarget::kSecondState: return 4 + decay;  // Adam v
    default: break;
  }
  switch (c.kind) {
    case ir::OptimizerKind::kSgd: return 2 + decay;
    case ir::OptimizerKind::kMomentum: return state ? 3 + decay : c.nesterov ? 4 + decay : 2;
    case ir::OptimizerKind::kAdam:
      return state ? 3 + decay : 9 + (c.decoupled_weight_decay && c.weight_decay != 0 ? 2 : 0) + (c.post_decay != 0);
    case ir::OptimizerKind::kAdagrad: return state ? 2 + decay : 9 + decay;
    case ir::OptimizerKind::kLars: return state ? 3 + decay : 1;
  }
  return 0;
}

// Unary and UnaryGrad of the kinds whose work differs from one transcendental's 4 (the
// derivative's multiply by dy included; a select on the sign of x is a compare and a select).
// The exp of Elu and Selu issues to the transcendental unit beside the ALU, whose work is
// then the select and the constants around it (measurements/tpu_v4_ops.json: large f16 Elu
// and Selu take as long as Relu, docs/fidelity.md):
//   LeakyRelu  x >= 0 ? x : alpha x                 2 (multiply, select); gradient 3
//   Elu        x >= 0 ? x : alpha (e^x - 1)         4 (exp, subtract, multiply, select);
//                                                     gradient x > 0 ? dy : alpha e^x dy: 4
//   Selu       gamma (Elu's select)                 4 (gamma folded into the select's two sides); gradient 4
//   Floor, Ceil                                     1 (the vector unit's float-to-integral rounding)
//   Sign       x > 0 ? 1 : (x < 0 ? -1 : 0)          2 (two compare-selects)
inline uint32_t unaryOpsPerElement(const ir::Op& op) {
  const bool grad = op.type == ir::OpType::kUnaryGrad;
  switch (op.unary) {
    case ir::UnaryKind::kLeakyRelu: return grad ? 3 : 2;
    case ir::UnaryKind::kElu:
    case ir::UnaryKind::kSelu: return 4;
    case ir::UnaryKind::kFloor:
    case ir::UnaryKind::kCeil: return 1;
    case ir::UnaryKind::kSign: return 2;
    default: return vectorOpsPerElement(op.type);
  }
}

// What lowerVector and the fused groups charge per element of an op.
inline uint32_t vectorOpsPerElement(const ir::Op& op) {
  switch (op.type) {
    case ir::OpType::kOptimizerUpdate: return optimizerOpsPerElement(op);
    case ir::OpType::kUnary:
    case ir::OpType::kUnaryGrad: return unaryOpsPerElement(op);
    default: return vectorOpsPerElement(op.type);
  }
}

}  // namespace tpusim
