// The names of the IR's enums and Graph::toString, the text --print-ir-after and
// --log-level debug print.
#include <sstream>

#include "frontend/ir/graph.hpp"

namespace tpusim::ir {

const char* tensorRoleName(TensorRole role) {
  switch (role) {
    case TensorRole::kInput: return "input";
    case TensorRole::kLabel: return "label";
    case TensorRole::kWeight: return "weight";
    case TensorRole::kConstant: return "constant";
    case TensorRole::kActivation: return "activation";
    case TensorRole::kGradient: return "gradient";
    case TensorRole::kLoss: return "loss";
    case TensorRole::kOptimizerState: return "optimizer state";
  }
  return "?";
}

const char* phaseName(Phase phase) {
  switch (phase) {
    case Phase::kForward: return "forward";
    case Phase::kBackward: return "backward";
    case Phase::kUpdate: return "update";
    case Phase::kCollective: return "collective";
    case Phase::kLossScaling: return "loss_scaling";
  }
  return "?";
}

const char* opTypeName(OpType type) {
  switch (type) {
    case OpType::kMatMul: return "MatMul";
    case OpType::kAdd: return "Add";
    case OpType::kSub: return "Sub";
    case OpType::kMul: return "Mul";
    case OpType::kDiv: return "Div";
    case OpType::kScale: return "Scale";
    case OpType::kRelu: return "Relu";
    case OpType::kReluGrad: return "ReluGrad";
    case OpType::kReshape: return "Reshape";
    case OpType::kReduceSumTo: return "ReduceSumTo";
    case OpType::kSoftmaxCrossEntropy: return "SoftmaxCrossEntropy";
    case OpType::kSoftmaxCrossEntropyGrad: return "SoftmaxCrossEntropyGrad";
    case OpType::kSgdUpdate: return "SgdUpdate";
    case OpType::kSoftmax: return "Softmax";
    case OpType::kLogSoftmax: return "LogSoftmax";
    case OpType::kNllLoss: return "NllLoss";
    case OpType::kUnary: return "Unary";
    case OpType::kUnaryGrad: return "UnaryGrad";
    case OpType::kTranspose: return "Transpose";
    case OpType::kReduce: return "Reduce";
    case OpType::kBroadcastTo: return "BroadcastTo";
    case OpType::kConcat: return "Concat";
    case OpType::kSlice: return "Slice";
    case OpType::kSliceGrad: return "SliceGrad";
    case OpType::kGather: return "Gather";
    case OpType::kGatherGrad: return "GatherGrad";
    case OpType::kWhere: return "Where";
    case OpType::kPow: return "Pow";
    case OpType::kPowGrad: return "PowGrad";
    case OpType::kPool: return "Pool";
    case OpType::kPoolGrad: return "PoolGrad";
    case OpType::kPoolArgmax: return "PoolArgmax";
    case OpType::kConv: return "Conv";
    case OpType::kConvGradInput: return "ConvGradInput";
    case OpType::kConvGradWeight: return "ConvGradWeight";
    case OpType::kCast: return "Cast";
    case OpType::kMseLoss: return "MseLoss";
    case OpType::kMseLossGrad: return "MseLossGrad";
    case OpType::kNllLossGrad: return "NllLossGrad";
    case OpType::kOptimizerUpdate: return "OptimizerUpdate";
    case OpType::kMaximum: return "Maximum";
    case OpType::kMinimum: return "Minimum";
    case OpType::kCompare: return "Compare";
    case OpType::kAllReduce: return "AllReduce";
  }
  return "?";
}

const char* reductionName(Reduction reduction) {
  switch (reduction) {
    case Reduction::kNone: return "none";
    case Reduction::kSum: return "sum";
    case Reduction::kMean: return "mean";
    case Reduction::kMax: return "max";
    case Reduction::kMin: return "min";
  }
  return "?";
}

const char* compareDirectionName(CompareDirection direction) {
  switch (direction) {
    case CompareDirection::kEq: return "EQ";
    case CompareDirection::kNe: return "NE";
    case CompareDirection::kLt: return "LT";
    case CompareDirection::kLe: return "LE";
    case CompareDirection::kGt: return "GT";
    case CompareDirection::kGe: return "GE";
  }
  return "?";
}

const char* unaryKindName(UnaryKind kind) {
  switch (kind) {
    case UnaryKind::kAbs: return "Abs";
    case UnaryKind::kErf: return "Erf";
    case UnaryKind::kExp: return "Exp";
    case UnaryKind::kLog: return "Log";
    case UnaryKind::kNeg: return "Neg";
    case UnaryKind::kReciprocal: return "Reciprocal";
    case UnaryKind::kSigmoid: return "Sigmoid";
    case UnaryKind::kSqrt: return "Sqrt";
    case UnaryKind::kTanh: return "Tanh";
    case UnaryKind::kRound: return "Round";
    case UnaryKind::kLeakyRelu: return "LeakyRelu";
    case UnaryKind::kElu: return "Elu";
    case UnaryKind::kSelu: return "Selu";
    case UnaryKind::kFloor: return "Floor";
    case UnaryKind::kCeil: return "Ceil";
    case UnaryKind::kSign: return "Sign";
    case UnaryKind::kSin: return "Sin";
    case UnaryKind::kCos: return "Cos";
    case UnaryKind::kTan: return "Tan";
    case UnaryKind::kAsin: return "Asin";
    case UnaryKind::kAcos: return "Acos";
    case UnaryKind::kAtan: return "Atan";
    case UnaryKind::kSinh: return "Sinh";
    case UnaryKind::kCosh: return "Cosh";
    case UnaryKind::kAsinh: return "Asinh";
    case UnaryKind::kAcosh: return "Acosh";
    case UnaryKind::kAtanh: return "Atanh";
  }
  return "?";
}

const char* unitName(Unit unit) {
  switch (unit) {
    case Unit::kUnplaced: return "unplaced";
    case Unit::kMxu: return "mxu";
    case Unit::kVpu: return "vpu";
    case Unit::kDma: return "dma";
    case Unit::kView: return "view";
    case Unit::kIci: return "ici";
  }
  return "?";
}

std::string Graph::toString() const {
  std::ostringstream text;
  // A computed tensor whose op a pass removed, and that nothing reads, is not a source: not listed.
  std::vector<bool> used(m_tensors.size(), false);
  for (const Op& op : m_ops) {
    for (int input : op.inputs) used[static_cast<size_t>(input)] = true;
  }
  for (const Tensor& t : m_tensors) {
    if (t.alias_of >= 0) used[static_cast<size_t>(t.alias_of)] = true;
  }
  for (int output : m_outputs) used[static_cast<size_t>(output)] = true;
  const auto computedRole = [](TensorRole role) {
    return role == TensorRole::kActivation || role == TensorRole::kGradient || role == TensorRole::kLoss;
  };
  for (const Tensor& t : m_tensors) {
    if (m_producer[static_cast<size_t>(t.id)] < 0 && (used[static_cast<size_t>(t.id)] || !computedRole(t.role))) {
      text << tensorRoleName(t.role) << " %" << t.id << " " << t.name << ": " << dtypeName(t.dtype)
           << shapeToString(t.shape) << "\n";
    }
  }
  for (const Op& op : m_ops) {
    const Tensor& out = m_tensors[static_cast<size_t>(op.outputs[0])];
    text << "%" << out.id << " = " << opTypeName(op.type);
    if (op.transpose_a || op.transpose_b) text << "[ta=" << op.transpose_a << ",tb=" << op.transpose_b << "]";
    if (op.type == OpType::kCompare) text << "[" << compareDirectionName(op.compare) << "]";
    if ((op.type == OpType::kUnary || op.type == OpType::kUnaryGrad) && isParametricUnary(op.unary)) {
      text << "[" << unaryKindName(op.unary) << ",alpha=" << op.alpha;
      if (op.unary == UnaryKind::kSelu) text << ",gamma=" << op.gamma;
      text << "]";
    }
    const bool extremum = op.reduction == Reduction::kMax || op.reduction == Reduction::kMin;
    if (op.type == OpType::kAllReduce || (op.type == OpType::kReduce && extremum))
      text << "[" << reductionName(op.reduction) << "]";
    text << "(";
    for (size_t i = 0; i < op.inputs.size(); ++i) text << (i ? ", " : "") << "%" << op.inputs[i];
    text << ") : " << dtypeName(out.dtype) << shapeToString(out.shape);
    if (op.placement != Unit::kUnplaced) text << " @" << unitName(op.placement);
    if (op.fusion_group >= 0) text << " fused:" << op.fusion_group;
    if (!op.mxu_padded.empty()) {
      text << " padded:" << op.mxu_padded[0] << "x" << op.mxu_padded[1] << "x" << op.mxu_padded[2];
    }
    if (op.phase != Phase::kForward) text << " " << phaseName(op.phase);
    text << "  # " << op.name << "\n";
  }
  for (int output : m_outputs) text << "output %" << output << "\n";
  return text.str();
}

}  // namespace tpusim::ir
