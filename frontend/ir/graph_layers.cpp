// Graph builders of the layer ops: pooling, convolution and softmax, with their gradients.
#include <algorithm>

#include "frontend/ir/graph.hpp"
#include "frontend/ir/graph_builders.hpp"
#include "sim/common/error.hpp"

namespace tpusim::ir {

using builder_detail::isFloat;
using builder_detail::makeOp;
using builder_detail::shapeError;

namespace {

Shape poolShape(const Tensor& tx, const PoolGeometry& g, const std::string& name, bool is_float) {
  if (tx.shape.size() < 3) shapeError(name, "pooling needs [N, C, spatial...], got " + shapeToString(tx.shape));
  const size_t rank = tx.shape.size() - 2;
  if (g.kernel.size() != rank || g.strides.size() != rank || g.dilations.size() != rank || g.pads.size() != 2 * rank) {
    shapeError(name, "the pooling geometry does not match " + std::to_string(rank) + " spatial dimensions");
  }
  if (!g.max && !is_float) shapeError(name, "average pooling needs a float tensor");
  Shape out = {tx.shape[0], tx.shape[1]};
  for (size_t d = 0; d < rank; ++d) {
    const int64_t span = g.dilations[d] * (g.kernel[d] - 1) + 1;
    const int64_t padded = tx.shape[2 + d] + g.pads[d] + g.pads[d + rank];
    if (g.strides[d] < 1 || g.dilations[d] < 1 || g.kernel[d] < 1 || padded < span) {
      shapeError(name, "the pooling window does not fit the padded input");
    }
    int64_t size = (padded - span + (g.ceil_mode ? g.strides[d] - 1 : 0)) / g.strides[d] + 1;
    // In ceil mode a last window that would start inside the end padding is dropped.
    if (g.ceil_mode && (size - 1) * g.strides[d] >= tx.shape[2 + d] + g.pads[d]) --size;
    out.push_back(size);
  }
  return out;
}

}  // namespace

int Graph::pool(const std::string& name, int x, const PoolGeometry& g) {
  const Tensor& tx = checked(x, name);
  Shape out = poolShape(tx, g, name, isFloat(tx.dtype));
  Op op = makeOp(name, OpType::kPool, {x});
  op.pool = g;
  const DType dtype = tx.dtype;
  return append(std::move(op), name + ":out", std::move(out), dtype, TensorRole::kActivation);
}

int Graph::poolArgmax(const std::string& name, int x, const PoolGeometry& g) {
  const Tensor& tx = checked(x, name);
  if (!g.max || !isFloat(tx.dtype)) shapeError(name, "argmax indices come from float max pooling");
  Shape out = poolShape(tx, g, name, true);
  Op op = makeOp(name, OpType::kPoolArgmax, {x});
  op.pool = g;
  return append(std::move(op), name + ":out", std::move(out), DType::kInt64, TensorRole::kActivation);
}

int Graph::poolGrad(const std::string& name, int dy, int x, const PoolGeometry& g) {
  const Tensor& tx = checked(x, name);
  checked(dy, name);
  Op op = makeOp(name, OpType::kPoolGrad, {dy, x});
  op.pool = g;
  return append(std::move(op), name + ":out", tx.shape, tx.dtype, TensorRole::kGradient);
}

int Graph::conv(const std::string& name, int x, int w, const ConvGeometry& g) {
  const Tensor& tx = checked(x, name);
  const Tensor& tw = checked(w, name);
  if (tx.shape.size() != 4 || tw.shape.size() != 4) {
    throw Error(ErrorKind::kUnsupported, "op '" + name +
                                             "': only 2-D convolutions ([N, C, H, W]) are supported yet, got " +
                                             shapeToString(tx.shape) + " and " + shapeToString(tw.shape));
  }
  const bool int8 = tx.dtype == DType::kInt8 && tw.dtype == DType::kInt8;  // into int32, as MatMul
  if (!int8 && (tx.dtype != tw.dtype || !isFloat(tx.dtype))) {
    shapeError(name, "Conv operands must share one float dtype or both be int8");
  }
  if (g.group < 1 || tx.shape[1] % g.group != 0 || tw.shape[0] % g.group != 0 || tw.shape[1] * g.group != tx.shape[1]) {
    shapeError(name, "channels " + shapeToString(tx.shape) + " and weights " + shapeToString(tw.shape) +
                         " do not match group " + std::to_string(g.group));
  }
  Shape out = {tx.shape[0], tw.shape[0]};
  for (size_t d = 0; d < 2; ++d) {
    const int64_t span = g.dilations[d] * (tw.shape[2 + d] - 1) + 1;
    const int64_t padded = tx.shape[2 + d] + g.pads[d] + g.pads[d + 2];
    if (g.strides[d] < 1 || g.dilations[d] < 1 || padded < span)
      shapeError(name, "the kernel does not fit the padded input");
    out.push_back((padded - span) / g.strides[d] + 1);
  }
  Op op = makeOp(name, OpType::kConv, {x, w});
  op.conv = g;
  const DType dtype = int8 ? DType::kInt32 : tx.dtype;
  return append(std::move(op), name + ":out", std::move(out), dtype, TensorRole::kActivation);
}

int Graph::convGradInput(const std::string& name, int dy, int w, const Shape& x_shape, const ConvGeometry& g) {
  const DType dtype = checked(dy, name).dtype;
  checked(w, name);
  Op op = makeOp(name, OpType::kConvGradInput, {dy, w});
  op.conv = g;
  return append(std::move(op), name + ":out", x_shape, dtype, TensorRole::kGradient);
}

int Graph::convTranspose(const std::string& name, int x, int w, const Shape& out_shape, const ConvGeometry& g) {
  const Tensor& tx = checked(x, name);
  const Tensor& tw = checked(w, name);
  if (tx.shape.size() != 4 || tw.shape.size() != 4 || out_shape.size() != 4) {
    throw Error(ErrorKind::kUnsupported,
                "op '" + name + "': only 2-D transposed convolutions ([N, C, H, W]) are supported yet, got " +
                    shapeToString(tx.shape) + " and " + shapeToString(tw.shape));
  }
  if (tx.dtype != tw.dtype || !isFloat(tx.dtype)) shapeError(name, "ConvTranspose operands must share one float dtype");
  if (g.group < 1 || tx.shape[1] != tw.shape[0] || tw.shape[0] % g.group != 0 ||
      out_shape[1] != tw.shape[1] * g.group || out_shape[0] != tx.shape[0]) {
    shapeError(name, "input " + shapeToString(tx.shape) + ", weights " + shapeToString(tw.shape) + " and output " +
                         shapeToString(out_shape) + " do not match group " + std::to_string(g.group));
  }
  // The Conv it transposes takes `out_shape` back to x's.
  for (size_t d = 0; d < 2; ++d) {
    const int64_t span = g.dilations[d] * (tw.shape[2 + d] - 1) + 1;
    const int64_t padded = out_shape[2 + d] + g.pads[d] + g.pads[d + 2];
    if (g.strides[d] < 1 || g.dilations[d] < 1 || padded < span ||
        (padded - span) / g.strides[d] + 1 != tx.shape[2 + d]) {
      shapeError(name, "output " + shapeToString(out_shape) + " does not convolve back to the input " +
                           shapeToString(tx.shape) + " with these strides, pads and dilations");
    }
  }
  Op op = makeOp(name, OpType::kConvGradInput, {x, w});
  op.conv = g;
  return append(std::move(op), name + ":out", out_shape, tx.dtype, TensorRole::kActivation);
}

int Graph::convGradWeight(const std::string& name, int x, int dy, const Shape& w_shape, const ConvGeometry& g) {
  const DType dtype = checked(dy, name).dtype;
  checked(x, name);
  Op op = makeOp(name, OpType::kConvGradWeight, {x, dy});
  op.conv = g;
  return append(std::move(op), name + ":out", w_shape, dtype, TensorRole::kGradient);
}

int Graph::softmax(const std::string& name, int x, int64_t axis, bool log) {
  const Tensor& tx = checked(x, name);
  const auto rank = static_cast<int64_t>(tx.shape.size());
  if (axis < -rank || axis >= rank)
    shapeError(name, "axis " + std::to_string(axis) + " is out of range for " + shapeToString(tx.shape));
  if (!isFloat(tx.dtype)) shapeError(name, "softmax needs a float tensor");
  Op op = makeOp(name, log ? OpType::kLogSoftmax : OpType::kSoftmax, {x});
  op.axis = axis < 0 ? axis + rank : axis;
  return append(std::move(op), name + ":out", tx.shape, tx.dtype, TensorRole::kActivation);
}

}  // namespace tpusim::ir
