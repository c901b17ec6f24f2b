// Internal to frontend/import: the ONNX importer class, whose op families are
// defined in onnx_import.cpp (graph, elementwise, losses),
// onnx_import_layers.cpp (convolution, pooling, normalization, shapes and views) and
// onnx_fold.cpp (nodes evaluated while compiling: shape arithmetic on constants).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "frontend/import/onnx_import.hpp"
#include "sim/common/error.hpp"

namespace tpusim::onnx_detail {

[[noreturn]] inline void invalid(const std::string& message) {
  throw Error(ErrorKind::kInvalidInput, message);
}

inline std::string nodeLabel(const onnx::NodeProto& node) {
  return "node '" + (node.name().empty() ? node.output_size() ? node.output(0) : std::string("?") : node.name()) +
         "' (" + node.op_type() + ")";
}

inline DType fromOnnxType(int32_t type, const std::string& what) {
  switch (type) {
    case onnx::TensorProto::FLOAT: return DType::kF32;
    case onnx::TensorProto::DOUBLE: return DType::kF64;
    case onnx::TensorProto::FLOAT16: return DType::kF16;
    case onnx::TensorProto::BFLOAT16: return DType::kBF16;
    case onnx::TensorProto::INT8: return DType::kInt8;
    case onnx::TensorProto::UINT8: return DType::kUInt8;
    case onnx::TensorProto::INT32: return DType::kInt32;
    case onnx::TensorProto::INT64: return DType::kInt64;
    case onnx::TensorProto::UINT32: return DType::kUInt32;
    case onnx::TensorProto::UINT64: return DType::kUInt64;
    case onnx::TensorProto::BOOL: return DType::kBool;
    default: break;
  }
  throw Error(ErrorKind::kUnsupported,
              what + " has ONNX element type " + std::to_string(type) + ", which tpusim does not support");
}

inline const onnx::AttributeProto* attribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& attr : node.attribute()) {
    if (attr.name() == name) return &attr;
  }
  return nullptr;
}

inline int64_t intAttribute(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  const auto* attr = attribute(node, name);
  return attr ? attr->i() : fallback;
}

inline float floatAttribute(const onnx::NodeProto& node, const std::string& name, float fallback) {
  const auto* attr = attribute(node, name);
  return attr ? attr->f() : fallback;
}

inline void rejectAttributesExcept(const onnx::NodeProto& node, const std::set<std::string>& known) {
  for (const auto& attr : node.attribute()) {
    if (!known.count(attr.name())) {
      throw Error(ErrorKind::kUnsupported, nodeLabel(node) + ": attribute '" + attr.name() + "' is not supported yet");
    }
  }
}

inline int64_t elementCountOf(const onnx::TensorProto& tensor) {
  int64_t count = 1;
  for (int64_t dim : tensor.dims()) count *= dim;
  return count;
}

// The ONNX training operators' domain (onnx_import_training.cpp).
inline constexpr const char* kOnnxTrainingDomain = "ai.onnx.preview.training";
bool isTrainingOp(const onnx::NodeProto& node);

class Importer {
 public:
  Importer(const onnx::ModelProto& model, int64_t batch, bool batch_requested,
           const std::map<std::string, ir::TensorValue>& known, bool training)
      : m_model(model), m_batch(batch), m_batch_requested(batch_requested), m_training(training), m_known(known) {}

  ImportedModel run();

 private:
  void checkOpset();

  void addInitializer(const onnx::TensorProto& init);
  // For each shape-only initializer, how its values are made up, from the first node that reads it.
  void chooseWeightInits();
  // Whether `name` (graph tensor `tensor`) is a float initializer, a weight: not computed.
  bool isInitializerWeight(const std::string& name, int tensor) const;
  // A new weight `name` with the values (or the made-up values) of initializer `source`.
  int copyOfWeight(const std::string& source, const std::string& name);

  void addGraphInput(const onnx::ValueInfoProto& input);

  // The graph tensor of an ONNX value; a compile-time constant enters the graph on first use.
  int value(const std::string& name, const std::string& user);

  // The value of `name` when it is known while compiling (a Constant, an integer
  // initializer, a known input, or a folded node's result), else nullptr.
  const ir::TensorValue* constantValue(const std::string& name) const;

  // Records a compile-time constant; it becomes a graph tensor only if a graph op uses it.
  void defineConstant(const onnx::NodeProto& node, int index, ir::TensorValue value);

  // The shape of a value, constant or not, without bringing a constant into the graph.
  ir::Shape shapeOf(const std::string& name, const std::string& user) const;

  // Evaluates `node` while compiling when its inputs are all constants (Shape and Size
  // need only the input's shape); returns false when it must run as graph ops. An op that
  // exists only at compile time (Range, ConstantOfShape) with a runtime input is an
  // "unsupported" error.
  bool foldNode(const onnx::NodeProto& node, const std::string& label);

  // Slice's clamped geometry over `shape`: the first index, step and length of every dimension.
  void sliceGeometry(const onnx::NodeProto& node, const std::string& label, const ir::Shape& shape,
                     std::vector<int64_t>& first, std::vector<int64_t>& stride, ir::Shape& out) const;

  // Gelu (opset 20) as 0.5 x (1 + erf(x / sqrt 2)), or with approximate="tanh" as
  // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
  void importGelu(const onnx::NodeProto& node, const std::string& label);

  // PRelu as relu(x) - slope relu(-x): elementwise ops the fusion pass joins into one kernel,
  // exact for infinite x (x - relu(x) would give inf - inf), with slope's gradient from Mul's.
  void importPRelu(const onnx::NodeProto& node, const std::string& label);

  // Dropout is the identity unless its training_mode input is true with a ratio above 0,
  // which is random and not supported; the optional mask output is then all true.
  void importDropout(const onnx::NodeProto& node, const std::string& label);
  void importPad(const onnx::NodeProto& node, const std::string& label);
  void importGroupedNorm(const onnx::NodeProto& node, const std::string& label);
  void importRearrange(const onnx::NodeProto& node, const std::string& label);
  void importResize(const onnx::NodeProto& node, const std::string& label);
  // Resize's cubic mode along one axis: four Gathers of the neighbours, weighted and added.
  int cubicResized(const onnx::NodeProto& node, const std::string& name, const std::string& part,
                   const std::string& result, int x, int64_t axis, int64_t in, int64_t out, double scale,
                   const std::string& transform, const ir::Shape& along);
  void importMasked(const onnx::NodeProto& node, const std::string& label);  // Trilu, OneHot
  // LSTM, GRU and RNN unrolled over the sequence (onnx_import_recurrent.cpp).
  void importRecurrent(const onnx::NodeProto& node, const std::string& label);
  // The values of a constant float input (a Constant, or an initializer read as one).
  std::vector<double> constantFloats(const onnx::NodeProto& node, int index, const std::string& label) const;
  // (x - mean) / sqrt(var + epsilon) over `axes` (kept), with the mean and 1 / sqrt(var + epsilon).
  struct Normalized {
    int y = -1, mean = -1, inv_stddev = -1;
  };
  Normalized normalized(const std::string& name, int x, const std::vector<int64_t>& axes, float epsilon);
  // Softplus, Softsign, HardSigmoid, HardSwish, Mish, Celu, Clip, Max, Min as IR ops
  // (onnx_import_activations.cpp); false for another op.
  bool importComposedActivation(const onnx::NodeProto& node, const std::string& label);
  // Sum, Mean, ThresholdedRelu, Shrink, IsNaN, IsInf, CastLike, MeanVarianceNormalization and LpNormalization
  // (onnx_import_elementwise.cpp); false for another op.
  bool importElementwise(const onnx::NodeProto& node, const std::string& label);

  void define(const onnx::NodeProto& node, int tensor);

  void defineOutput(const onnx::NodeProto& node, int index, int tensor);

  // The values of an integer input that must be known when compiling (a shape, axes).
  std::vector<int64_t> constantInts(const onnx::NodeProto& node, int index, const std::string& label) const;

  static int64_t normalizeAxis(int64_t axis, int64_t rank, const std::string& label);

  // The output shape of Reshape, Flatten, Squeeze or Unsqueeze: all are views.
  ir::Shape viewShape(const onnx::NodeProto& node, const std::string& label, const ir::Shape& in) const;

  // LayerNormalization (opset 17) as the ops it is made of, so that training differentiates it:
  // mean = E[x], d = x - mean, inv = 1 / sqrt(E[d^2] + epsilon), y = d * inv * scale + bias, the
  // expectations over dimensions axis .. rank-1 (kept as 1s). Mean and InvStdDev are optional outputs.
  void importLayerNorm(const onnx::NodeProto& node, const std::string& label);

  std::vector<int64_t> intsAttribute(const onnx::NodeProto& node, const std::string& name,
                                     std::vector<int64_t> fallback) const;

  // SAME_UPPER / SAME_LOWER padding: output = ceil(input / stride), the odd pad at the end
  // (upper) or the start (lower). Fills pads[d] and pads[d + 2].
  void samePadding(const std::string& mode, const ir::Shape& x_shape, const std::vector<int64_t>& kernel,
                   const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                   std::vector<int64_t>& pads) const;

  void importPool(const onnx::NodeProto& node, const std::string& label, bool max);

  // Conv over [N, C, H, W], with an optional bias added as [M, 1, 1].
  void importConv(const onnx::NodeProto& node, const std::string& label);
  // The convolution of x by w with the node's Conv attributes (1-D through a 2-D view), no bias.
  int convolved(const onnx::NodeProto& node, const std::string& label, const std::string& name, int x, int w);
  // QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, ConvInteger,
  // QLinearMatMul and QLinearConv (onnx_import_quantized.cpp).
  void importQuantized(const onnx::NodeProto& node, const std::string& label);
  // Einsum as diagonals, sums and batched MatMuls (onnx_import_einsum.cpp).
  void importEinsum(const onnx::NodeProto& node, const std::string& label);
  void importConvTranspose(const onnx::NodeProto& node, const std::string& label);
  // A Conv's or ConvTranspose's attributes for its spatial rank (1, 2 or 3; else unsupported).
  struct ConvAttributes {
    size_t rank = 2;
    std::vector<int64_t> kernel, strides, dilations, pads;
    int64_t group = 1;
    std::string auto_pad;
  };
  ConvAttributes convAttributes(const onnx::NodeProto& node, const std::string& label, const ir::Shape& x_shape,
                                const ir::Shape& w_shape) const;
  // A 3-D Conv (or ConvTranspose into `out_shape`) as 2-D ones per kernel depth (onnx_import_conv3d.cpp).
  int conv3d(const std::string& name, int x, int w, const ConvAttributes& attributes);
  int convTranspose3d(const std::string& name, int x, int w, const ir::Shape& out_shape,
                      const ConvAttributes& attributes);
  // The 2-D geometry it runs as (a 1-D one over a unit height).
  static ir::ConvGeometry geometry2d(const ConvAttributes& attributes);
  // A [N, C, L] tensor (or weights [M, C, K]) viewed as [N, C, 1, L]; a 4-D one as it is.
  int as2d(int tensor, const std::string& name);
  // `out` plus the node's optional bias input [C], broadcast over the `rank` spatial dimensions.
  int withBias(const onnx::NodeProto& node, const std::string& label, const std::string& name, int out, size_t rank,
               int64_t channels);

  // A scalar constant of `dtype`, for the decompositions below.
  int scalarConstant(const std::string& name, DType dtype, float value);
  // A constant tensor with its values (which travel with the weights).
  int constantTensor(const std::string& name, ir::TensorValue value);
  // Mod, CumSum, ReduceProd, ArgMax, ArgMin, Hardmax and TopK as IR ops (onnx_import_math.cpp).
  void importMath(const onnx::NodeProto& node, const std::string& label);
  // The index of the first (or last) extremum of x along `axis`, kept as a dimension of 1 (int64).
  int argExtremum(const std::string& name, int x, int64_t axis, bool max, bool last);
  // GatherElements, GatherND, ScatterElements and ScatterND as flat-index Gathers and
  // scatter-adds (onnx_import_indexing.cpp).
  void importIndexing(const onnx::NodeProto& node, const std::string& label);
  // The element of data (shape `data_shape`) that each element of `indices` names along `axis`,
  // as an index into the flattened data (int64, the shape of indices; negative indices wrapped).
  int flatElementIndex(const std::string& name, int indices, const ir::Shape& data_shape, int64_t axis);

  // BatchNormalization over [N, C, ...] as the ops it is made of. Inference uses the running
  // mean and variance; training (training_mode, or a training import) the batch's, and then
  // also yields the updated running statistics: momentum x running + (1 - momentum) x batch.
  void importBatchNorm(const onnx::NodeProto& node, const std::string& label);

  // Slice (opset 13): starts, ends and the optional axes and steps are constant inputs;
  // out-of-range starts and ends clamp as numpy's do.
  void importSlice(const onnx::NodeProto& node, const std::string& label);

  // Split (opset 13) along `axis` into the given sizes (a constant input) or equal parts.
  void importSplit(const onnx::NodeProto& node, const std::string& label);

  // ReduceSum takes its axes as an input (opset 13), ReduceMean as an attribute.
  void importReduce(const onnx::NodeProto& node, const std::string& label);

  static void expectInputCount(const onnx::NodeProto& node, int min, int max, const std::string& label);

  static std::optional<ir::UnaryKind> unaryKind(const std::string& type);

  // Equal, Less, LessOrEqual, Greater and GreaterOrEqual whose inputs are not all constants.
  static std::optional<ir::CompareDirection> compareDirection(const std::string& type);

  // A Constant node becomes a constant tensor whose value travels with the weights.
  void importConstant(const onnx::NodeProto& node, const std::string& label);

  // SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss share their attributes.
  void importLoss(const onnx::NodeProto& node, const std::string& label, bool with_softmax);

  void expectInputs(const onnx::NodeProto& node, int min, int max);

  std::string opName(const onnx::NodeProto& node);

  void importNode(const onnx::NodeProto& node);

  // Adam, Adagrad, Momentum of ai.onnx.preview.training (onnx_import_training.cpp).
  void importTrainingOp(const onnx::NodeProto& node, const std::string& label);

  const onnx::ModelProto& m_model;
  int64_t m_batch;
  bool m_batch_requested;
  bool m_training = false;
  const std::map<std::string, ir::TensorValue>& m_known;
  bool m_first_input = true;
  ImportedModel m_result;
  std::map<std::string, int> m_values;
  std::map<std::string, ir::TensorValue> m_constants;  // compile-time values not in the graph (yet)
  std::map<std::string, ir::Shape> m_shape_only;       // initializers without values
  int m_unnamed = 0;
};

}  // namespace tpusim::onnx_detail
