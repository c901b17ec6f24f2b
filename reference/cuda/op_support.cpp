#include "reference/cuda/op_support.hpp"

#include "reference/cpu/mxu_gemm.hpp"
#include "sim/common/error.hpp"

namespace tpusim::reference::cuda {

namespace {

using ir::OpType;

DType dtypeOf(const ir::Graph& graph, int tensor) { return graph.tensor(tensor).dtype; }
const ir::Shape& shapeOf(const ir::Graph& graph, int tensor) { return graph.tensor(tensor).shape; }

bool allFloating(const ir::Graph& graph, const ir::Op& op) {
  for (int id : op.inputs) {
    if (!isFloatingDType(dtypeOf(graph, id))) return false;
  }
  return isFloatingDType(dtypeOf(graph, op.outputs[0]));
}

// The batch dimensions of a MatMul operand: all but the last two.
ir::Shape batchDims(const ir::Shape& shape) { return ir::Shape(shape.begin(), shape.end() - 2); }

// int8 operands summed into an int32 output (--precision int8), as the CPU executor tells them.
bool int8Product(const ir::Graph& graph, const ir::Op& op) {
  return isInt8Product(op, dtypeOf(graph, op.inputs[0]));
}

std::string matmulReason(const ir::Graph& graph, const ir::Op& op) {
  const DType dtype = dtypeOf(graph, op.outputs[0]);
  if (!int8Product(graph, op)) {
    if (dtype != DType::kF32 && dtype != DType::kBF16 && dtype != DType::kF16)
      return "the CUDA MatMul takes f32, bf16 or f16, or int8 into int32, not " + std::string(dtypeName(dtype));
    for (int id : op.inputs) {
      if (dtypeOf(graph, id) != dtype) return "the CUDA MatMul needs its operands in the output's dtype";
    }
  }
  const ir::Shape& a = shapeOf(graph, op.inputs[0]);
  const ir::Shape& b = shapeOf(graph, op.inputs[1]);
  if (a.size() < 2 || b.size() < 2) return "the CUDA MatMul needs matrices (rank 2 or more)";
  const ir::Shape batch = batchDims(shapeOf(graph, op.outputs[0]));
  for (const ir::Shape* operand : {&a, &b}) {
    if (operand->size() > 2 && batchDims(*operand) != batch)
      return "the CUDA MatMul broadcasts a rank-2 operand over the batch, not a partial batch shape";
  }
  return "";
}

std::string convReason(const ir::Graph& graph, const ir::Op& op) {
  const DType dtype = dtypeOf(graph, op.outputs[0]);
  const bool int8 = int8Product(graph, op);  // a Conv's (its gradients are never int8)
  if (!int8 && dtype != DType::kF32 && dtype != DType::kBF16 && dtype != DType::kF16)
    return "the CUDA convolutions take f32, bf16 or f16, or (forward) int8 into int32, not " +
           std::string(dtypeName(dtype));
  for (int id : op.inputs) {
    if (!int8 && dtypeOf(graph, id) != dtype) return "the convolution's operands need one dtype";
    if (shapeOf(graph, id).size() != 4) return "the CUDA executor runs 2-D convolutions only";
  }
  if (op.conv.pads.size() != 4) return "a 2-D convolution has four pads";
  return "";  // pads cuDNN cannot take (one side more than the other) are made up by op_launch
}

std::string poolReason(const ir::Graph& graph, const ir::Op& op) {
  const ir::Shape& x = shapeOf(graph, op.inputs[op.type == OpType::kPoolGrad ? 1 : 0]);
  if (x.size() < 3 || x.size() > static_cast<size_t>(kMaxRank)) return "it pools 1 to 6 spatial dimensions";
  const bool floating = isFloatingDType(dtypeOf(graph, op.inputs[0]));
  if (!floating && (op.type != OpType::kPool || !op.pool.max))
    return "the CUDA executor pools integers with max pooling only";
  return "";
}

// Gather indices and labels: int32 or int64. Fed ones are range-checked on the host before the
// run, computed ones by the op's kernels (kernels/reduce.hpp, kernels/losses.hpp).
std::string integerIndices(const ir::Graph& graph, int tensor, const char* what) {
  const DType dtype = dtypeOf(graph, tensor);
  if (dtype != DType::kInt64 && dtype != DType::kInt32) return std::string("its ") + what + " must be int32 or int64";
  return "";
}

}  // namespace

Elem elemOf(DType dtype) {
  switch (dtype) {
    case DType::kF32: return Elem::kF32;
    case DType::kBF16: return Elem::kBF16;
    case DType::kF16: return Elem::kF16;
    case DType::kInt64:
    case DType::kUInt64: return Elem::kI64;
    case DType::kInt32: return Elem::kI32;
    case DType::kUInt32: return Elem::kU32;
    case DType::kInt8: return Elem::kI8;
    case DType::kUInt8: return Elem::kU8;
    case DType::kBool: return Elem::kBool;
    case DType::kF64: break;
  }
  throw Error(ErrorKind::kUnsupported, "the CUDA executor holds no f64 tensors (the GPU reference computes in f32)");
}

std::string unsupportedReason(const ir::Graph& graph, const ir::Op& op, int64_t replicas) {
  if (op.outputs.size() != 1) return "it has " + std::to_string(op.outputs.size()) + " outputs";
  for (int id : op.inputs) {
    if (dtypeOf(graph, id) == DType::kF64) return "f64 tensors are CPU only";
    if (shapeOf(graph, id).size() > static_cast<size_t>(kMaxRank)) return "an operand has more than 8 dimensions";
  }
  const int out = op.outputs[0];
  if (dtypeOf(graph, out) == DType::kF64) return "f64 tensors are CPU only";
  if (shapeOf(graph, out).size() > static_cast<size_t>(kMaxRank)) return "its output has more than 8 dimensions";
  const bool floating = allFloating(graph, op);
  const std::string name = ir::opTypeName(op.type);
  switch (op.type) {
    case OpType::kMatMul: return matmulReason(graph, op);
    case OpType::kConv:
    case OpType::kConvGradInput:
    case OpType::kConvGradWeight: return convReason(graph, op);
    case OpType::kPool:
    case OpType::kPoolArgmax:
    case OpType::kPoolGrad: return poolReason(graph, op);
    case OpType::kDiv:  // an integer Div's kernel reports a zero divisor (op_launch's KernelFault)
    case OpType::kAdd:
    case OpType::kSub:
    case OpType::kMul:
    case OpType::kMaximum:
    case OpType::kMinimum:
    case OpType::kCompare:
    case OpType::kWhere:
    case OpType::kPow:
    case OpType::kCast:
    case OpType::kBroadcastTo:
    case OpType::kTranspose:
    case OpType::kSlice:
    case OpType::kConcat:
    case OpType::kReshape: return "";
    case OpType::kAllReduce:
      if (op.replicas == 1) return "";
      if (op.replicas != replicas) {
        return "all-reduce across " + std::to_string(op.replicas) + " replicas, and the CUDA reference runs " +
               std::to_string(replicas) + " (tpusim reference --replicas)";
      }
      if (op.group_stride != 1) return "an all-reduce over a strided group (tensor parallel) is not run on GPUs";
      if (op.reduction != ir::Reduction::kSum) return "NCCL all-reduces here sum only";
      return floating ? "" : "NCCL all-reduces floating tensors only here";
    case OpType::kReduce:
      if (isFloatingDType(dtypeOf(graph, out))) return "";
      return op.reduction == ir::Reduction::kMax || op.reduction == ir::Reduction::kMin
                 ? ""
                 : "the CUDA executor sums and averages floating tensors only";
    case OpType::kGather: return integerIndices(graph, op.inputs[1], "indices");
    case OpType::kGatherGrad:
      if (!isFloatingDType(dtypeOf(graph, op.inputs[0])) || !isFloatingDType(dtypeOf(graph, out)))
        return "its gradient must be floating";
      return integerIndices(graph, op.inputs[1], "indices");
    case OpType::kSoftmaxCrossEntropy:
    case OpType::kSoftmaxCrossEntropyGrad:
      if (!isFloatingDType(dtypeOf(graph, op.inputs[0])) || shapeOf(graph, op.inputs[0]).size() != 2)
        return "it needs floating [rows, classes] logits";
      return integerIndices(graph, op.inputs[1], "labels");
    case OpType::kNllLoss:
    case OpType::kNllLossGrad:
      if (!isFloatingDType(dtypeOf(graph, op.inputs[0]))) return "it needs floating log-probabilities";
      return integerIndices(graph, op.inputs[1], "labels");
    case OpType::kOptimizerUpdate: return "";  // floating states, an int64 step
    case OpType::kScale:
    case OpType::kRelu:
    case OpType::kReluGrad:
    case OpType::kUnary:
    case OpType::kUnaryGrad:
    case OpType::kSgdUpdate:
    case OpType::kReduceSumTo:
    case OpType::kSoftmax:
    case OpType::kLogSoftmax:
    case OpType::kSliceGrad:
    case OpType::kPowGrad:
    case OpType::kMseLoss:
    case OpType::kMseLossGrad: return floating ? "" : "the CUDA kernels of " + name + " take floating tensors only";
  }
  return "the CUDA executor has no kernel for it";
}

}  // namespace tpusim::reference::cuda
