// Keras-style mixed-precision policies on an imported forward graph: the variables
// (weights) stay in their f32 dtype, every op computes in the policy's compute dtype,
// and the loss is taken in f32. docs/frontend.md ("Precision policies") gives the rules.
#pragma once

#include <string>

#include "frontend/import/onnx_import.hpp"

namespace tpusim {

enum class PrecisionPolicy {
  kFloat32,         // the graph as imported
  kMixedBfloat16,   // compute in bf16, variables in f32
  kMixedFloat16,    // compute in f16, variables in f32; training adds dynamic loss scaling
  kInt8,            // inference only: int8 matmuls and convolutions, the rest in bf16 (int8_quantization.hpp)
};

// "float32", "mixed_bfloat16", "mixed_float16" or "int8"; any other name is kInvalidConfig.
PrecisionPolicy parsePrecisionPolicy(const std::string& name);
const char* precisionPolicyName(PrecisionPolicy policy);
// Keras's LossScaleOptimizer wraps the optimizer under mixed_float16 only: f16's range
// (largest finite 65504, smallest normal 2^-14) loses small gradients without it.
bool needsLossScaling(PrecisionPolicy policy);
// Throws Error (kUnsupported) for int8 in training mode: it is post-training quantization.
void checkPolicyForMode(PrecisionPolicy policy, const std::string& mode);

// Rewrites `model.graph` under `policy`:
//   - each f32 weight, constant (frozen statistics are Keras variables too) and non-label
//     input keeps its dtype and gets one Cast to the compute dtype ("<name>/cast_<dtype>"),
//     read by all its uses;
//   - every op whose output is f32 outputs the compute dtype instead (other dtypes,
//     integers, booleans and f64, are kept);
//   - the float operands of a loss op, and the graph's f32 outputs, are cast back to f32
//     first, so the loss, and the loss the training graph adds, are computed in f32.
// The weights keep their names, so their values (model.initializers) still apply.
// kInt8 is applyInt8Quantization instead (it renames the weights it quantizes).
void applyPrecisionPolicy(ImportedModel& model, PrecisionPolicy policy);

}  // namespace tpusim
