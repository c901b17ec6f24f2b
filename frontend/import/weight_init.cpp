#include "frontend/import/weight_init.hpp"

#include <cmath>

namespace tpusim {

namespace {

WeightInit zeros(const std::string& rule) {
  return {WeightInit::Kind::kZeros, 0, rule + ": 0"};
}
WeightInit ones(const std::string& rule) {
  return {WeightInit::Kind::kOnes, 0, rule + ": 1"};
}

WeightInit fanIn(const std::string& rule, int64_t fan_in) {
  return {WeightInit::Kind::kUniform, 1.0 / std::sqrt(static_cast<double>(fan_in > 0 ? fan_in : 1)),
          rule + ": U(+-1/sqrt(fan_in)), fan_in " + std::to_string(fan_in)};
}

int64_t product(const ir::Shape& shape, size_t from) {
  int64_t n = 1;
  for (size_t d = from; d < shape.size(); ++d) n *= shape[d];
  return n;
}

}  // namespace

WeightInit weightInitFor(const std::string& op_type, int input, const ir::Shape& shape, bool trans_b) {
  const size_t rank = shape.size();
  if (op_type == "Conv" || op_type == "ConvTranspose") {
    // PyTorch: fan_in = size(1) x the receptive field, for Conv [M, C/g, k...] and ConvTranspose [C, M/g, k...].
    if (input == 1 && rank >= 3) return fanIn(op_type + " weight", product(shape, 1));
    if (input == 2) return zeros(op_type + " bias");
  }
  if (op_type == "Gemm") {
    if (input == 1 && rank == 2) return fanIn("Gemm B", trans_b ? shape[1] : shape[0]);
    if (input == 2) return zeros("Gemm C");
  }
  if (op_type == "MatMul" && input == 1 && rank >= 2) return fanIn("MatMul B", shape[rank - 2]);
  if (op_type == "Transpose" && rank == 2) return fanIn("Linear weight [out, in] (read through a Transpose)", shape[1]);
  if (op_type == "BatchNormalization" || op_type == "LayerNormalization" || op_type == "InstanceNormalization" ||
      op_type == "GroupNormalization") {
    if (input == 1) return ones(op_type + " scale");
    if (input == 2) return zeros(op_type + " bias");
    if (input == 3) return zeros(op_type + " running mean");
    if (input == 4) return ones(op_type + " running variance");
  }
  if (op_type == "Gather" && input == 0) {
    return {WeightInit::Kind::kUniform, 0.02 * std::sqrt(3.0), "Gather table (an embedding): U with std 0.02"};
  }
  if (rank >= 2) return fanIn("a rank-" + std::to_string(rank) + " weight", shape.back());
  return zeros(op_type.empty() ? "a weight" : "a rank-" + std::to_string(rank) + " " + op_type + " operand");
}

}  // namespace tpusim
