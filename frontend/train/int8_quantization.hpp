// Post-training int8 quantization (`--precision int8`, inference only), as TFLite's and
// XLA's int8 inference do it; docs/frontend.md ("int8 inference") gives the rules.
//   - A MatMul whose right operand is a 2-D f32 weight, and a Conv of an f32 weight, run on
//     the MXU as int8 x int8 -> int32. The weight is stored int8 ("<w>/int8") with a
//     symmetric per-output-channel f32 scale ("<w>/scale": max |w_c| / 127), computed
//     here from the weight's values when the model has them.
//   - The activation is quantized before each such op, dynamically and per tensor:
//     range = max |x| + 2^-100, s = 127 / range, q = int8(round_half_even(x * s)) (VPU
//     work: an abs, a max reduction, an add, a reciprocal, a multiply, a round and a cast).
//   - The int32 sums are dequantized on the VPU: y = f32(acc) x (w_scale x range / 127).
//   - Every other op computes in f32, as imported (TFLite's dynamic-range quantization keeps
//     its float ops in f32 too): biases, batch norms, activations, softmax, and matmuls of
//     two activations.
#pragma once

#include "frontend/import/onnx_import.hpp"

namespace tpusim {

// Quantizes `model` in place. The f32 weights the quantized ops read are replaced by their
// int8 and scale tensors (and initializers), unless another op still reads them.
void applyInt8Quantization(ImportedModel& model);

// The per-output-channel quantization of one weight's values: element i belongs to output
// channel (i / channel_stride) % channels. scale_c = max |w_c| / 127 (1 for an all-zero channel) and
// q = round_half_even(w / scale_c), which stays within [-127, 127].
struct QuantizedWeight {
  ir::TensorValue values;  // int8
  ir::TensorValue scales;  // f32, one per output channel
};
QuantizedWeight quantizeWeight(const ir::TensorValue& weight, int64_t channels, int64_t channel_stride,
                               const ir::Shape& scale_shape);

}  // namespace tpusim
