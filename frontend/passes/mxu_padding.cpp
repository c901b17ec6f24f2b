#include "frontend/passes/mxu_padding.hpp"

#include "frontend/passes/fusion.hpp"

namespace tpusim {

std::array<int64_t, 3> gemmShapeOf(const ir::Graph& graph, const ir::Op& op) {
  const ir::Tensor& out = graph.tensor(op.outputs[0]);
  const ir::Tensor& first = graph.tensor(op.inputs[0]);
  const ir::Tensor& second = graph.tensor(op.inputs[1]);
  if (op.type == ir::OpType::kMatMul) {
    const size_t rank = out.shape.size();
    const int64_t k = op.transpose_a ? first.shape[first.shape.size() - 2] : first.shape.back();
    return {ir::elementCount(ir::Shape(out.shape.begin(), out.shape.end() - 1)), k, out.shape[rank - 1]};
  }
  const ir::Shape& w = op.type == ir::OpType::kConvGradWeight ? out.shape : second.shape;
  const ir::Shape& x = op.type == ir::OpType::kConvGradInput ? out.shape : first.shape;
  const ir::Shape& y = op.type == ir::OpType::kConv            ? out.shape
                       : op.type == ir::OpType::kConvGradInput ? first.shape
                                                               : second.shape;
  const int64_t out_per_group = w[0] / op.conv.group;
  const int64_t patch = w[1] * w[2] * w[3];
  const int64_t pixels = x[0] * y[2] * y[3];
  switch (op.type) {
    case ir::OpType::kConv: return {pixels, patch, out_per_group};
    case ir::OpType::kConvGradInput: return {pixels, out_per_group, patch};
    default: return {out_per_group, pixels, patch};
  }
}

ir::Graph padToMxuTile(const ir::Graph& graph, int64_t rows, int64_t cols) {
  ir::Graph result = graph;
  const auto up = [](int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; };
  for (size_t i = 0; i < result.ops().size(); ++i) {
    const ir::Op& op = result.ops()[i];
    if (!isMxuOp(op.type)) continue;
    const std::array<int64_t, 3> gemm = gemmShapeOf(result, op);
    result.annotate(i).mxu_padded = {gemm[0], up(gemm[1], rows), up(gemm[2], cols)};
  }
  return result;
}

}  // namespace tpusim
