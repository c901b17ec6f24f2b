// How to make up the values of a weight a shape-only trace left out (its initializer
// keeps the shape but not the values), so that the reference backends and `tpusim run
// --functional` can run the model: PyTorch's default initializations, chosen by the
// op that reads the weight. The values are not a trained model's; they are the same
// for the same seed on every side of a comparison (api/functional.hpp).
#pragma once

#include <string>

#include "frontend/ir/graph.hpp"

namespace tpusim {

struct WeightInit {
  enum class Kind { kZeros, kOnes, kUniform };
  Kind kind = Kind::kZeros;
  double bound = 0;  // kUniform: values uniform in [-bound, bound)
  std::string rule;  // why, for the report: "Conv weight: U(+-1/sqrt(fan_in))"
};

// The initialization of a weight of `shape` read as input `input` of ONNX op `op_type`
// (`trans_b`: Gemm's transB); `op_type` empty where no op reads it directly.
//   Conv, ConvTranspose weight; Gemm B; MatMul B; a rank-2 weight a Transpose reads
//     (PyTorch's Linear [out, in]): uniform in +-1/sqrt(fan_in), PyTorch's default for
//     Conv and Linear (kaiming_uniform with a = sqrt(5)); their biases 0.
//   BatchNormalization, LayerNormalization, InstanceNormalization, GroupNormalization:
//     scale 1, bias 0; running mean 0, running variance 1 (PyTorch's defaults).
//   Gather's table (an embedding): uniform with standard deviation 0.02 (BERT's and GPT-2's).
//   Anything else: rank 2 or more uniform in +-1/sqrt(last dimension), else 0.
WeightInit weightInitFor(const std::string& op_type, int input, const ir::Shape& shape, bool trans_b);

}  // namespace tpusim
