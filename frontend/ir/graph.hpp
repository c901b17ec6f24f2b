// The graph IR: tensors with static shapes and dtypes, and ops in
// topological order. Value-semantic and printable (Graph::toString).
//
// Ops are added through the typed builders below, which check operand shapes
// and infer the result's, so every Graph that exists is well formed.
// Elementwise ops broadcast their operands as numpy (and ONNX) do.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/common/dtype.hpp"

namespace tpusim::ir {

using Shape = std::vector<int64_t>;

int64_t elementCount(const Shape& shape);
// The most elements one tensor may have: 2^40 (4 TiB of f32) is above any TPU's memory,
// and keeps byte counts far from int64 overflow.
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 40;
// elementCount for an untrusted shape: an Error (kInvalidInput) naming `what` when a
// dimension is negative or the product exceeds kMaxTensorElements (or overflows int64).
int64_t checkedElementCount(const Shape& shape, const std::string& what);
std::string shapeToString(const Shape& shape);
// The numpy broadcast of two shapes; throws when they do not broadcast.
Shape broadcastShapes(const Shape& a, const Shape& b);

// kOptimizerState: a tensor the optimizer keeps between steps (a momentum buffer, Adam's
// moments, the step counter); the update overwrites it, as it does the weight.
enum class TensorRole { kInput, kLabel, kWeight, kConstant, kActivation, kGradient, kLoss, kOptimizerState };
const char* tensorRoleName(TensorRole role);

// The part of a training step an op belongs to. An op takes the phase its graph is building
// when it is appended (Graph::setPhase; the training-graph builder sets it per stage); a copy
// (Graph::cloneOp) keeps its source's, and an optimizer update is always kUpdate.
// kCollective: data parallelism's gradient all-reduces; kLossScaling: the overflow check and
// the gating and unscaling of the gradients after the backward (frontend/train/loss_scaling).
enum class Phase { kForward, kBackward, kUpdate, kCollective, kLossScaling };
const char* phaseName(Phase phase);

struct Tensor {
  int id = -1;
  std::string name;
  Shape shape;
  DType dtype = DType::kF32;
  TensorRole role = TensorRole::kActivation;
  // A tensor that shares its input's storage: a reshape's result, or an
  // optimizer's updated weight, which overwrites the weight.
  int alias_of = -1;

  uint64_t bytes() const { return static_cast<uint64_t>(elementCount(shape)) * dtypeBytes(dtype); }
};

enum class OpType {
  kMatMul,               // out = op(a) x op(b) over the last two dims, batch dims broadcast; op = optional transpose;
                         // int8 x int8 gives int32
  kAdd,                  // out = a + b (broadcast)
  kSub,                  // out = a - b (broadcast)
  kMul,                  // out = a * b (broadcast)
  kDiv,                  // out = a / b (broadcast; integers truncate)
  kScale,                // out = scalar * x
  kRelu,                 // out = max(x, 0)
  kReluGrad,             // dx = dy where x > 0, else 0 (inputs: dy, x)
  kReshape,              // out = x with another shape of the same element count (no data moves)
  kReduceSumTo,          // out = x summed over the dimensions broadcast from out's shape
  kSoftmaxCrossEntropy,  // loss = mean over rows of -log softmax(logits)[label]
  kSoftmaxCrossEntropyGrad,  // dlogits = (softmax(logits) - onehot(label)) / rows
  kSgdUpdate,                // w' = w - learning_rate * g, written over w
  kSoftmax,                  // exp(x) / sum exp(x) along `axis`
  kLogSoftmax,               // x - log sum exp(x) along `axis`
  kNllLoss,                  // -logp[n, label, d...] x weight[label], reduced (ONNX NegativeLogLikelihoodLoss)
  kUnary,                    // out = f(x) elementwise, f = Op::unary
  kUnaryGrad,                // dx = dy x f'(x), from (dy, x, f(x))
  kTranspose,                // out = x with its dimensions permuted by Op::perm
  kReduce,                   // out = sum or mean of x over Op::perm's axes (kept as 1s if keepdims)
  kBroadcastTo,              // out = x broadcast to the output's shape
  kConcat,                   // out = the inputs joined along `axis`
  kSlice,                    // out[i] = x[starts + i * steps] per dimension (Op::starts, Op::steps)
  kSliceGrad,                // dx = zeros of x's shape with dy placed where the Slice read
  kGather,                   // out = data indexed along `axis` by integer indices (negative ones wrap)
  kGatherGrad,               // ddata = zeros of data's shape with dy added at the gathered places (dy, indices)
  kWhere,                    // out = condition ? x : y (inputs: condition, x, y; broadcast)
  kPow,                      // out = a ^ b (broadcast; b may have another dtype; out has a's)
  kPowGrad,                  // from (dy, a, b, out): da (axis 0) or db (axis 1), at out's shape
  kPool,                     // max or average pooling of x [N, C, spatial...] (Op::pool)
  kPoolArgmax,               // the flattened input index of each max of a max Pool (int64)
  kPoolGrad,                 // dx of a Pool, from (dy, x)
  kConv,                     // 2-D convolution: x [N, C, H, W] * w [M, C/group, KH, KW] -> [N, M, OH, OW]
  kConvGradInput,            // dx of a Conv, from (dy, w)
  kConvGradWeight,           // dw of a Conv, from (x, dy)
  kCast,       // out = x converted to the output's dtype (floats round to nearest even; to integers truncates)
  kMaximum,    // out = max(a, b) (broadcast; NaN if either is NaN)
  kMinimum,    // out = min(a, b) (broadcast; NaN if either is NaN)
  kCompare,    // out = a <direction> b as bool (broadcast; Op::compare)
  kAllReduce,  // out = x reduced across Op::replicas replicas (Op::reduction); 1 replica: a copy
  // Training: losses and optimizers (frontend/ir/graph_training.cpp).
  kMseLoss,          // loss = mean over all elements of (x - targets)^2
  kMseLossGrad,      // dx = 2 (x - targets) / elements
  kNllLossGrad,      // dlogp of a sum or mean NllLoss (dloss = 1), from (logp, labels[, weights])
  kOptimizerUpdate,  // writes one parameter or optimizer state in place (Op::optimizer, Op::update_target)
};
enum class PadMode { kConstant, kEdge, kReflect };
const char* padModeName(PadMode mode);
const char* opTypeName(OpType type);
bool isElementwiseBinary(OpType type);
// Output element i depends only on element i of each (broadcast) operand.
bool isElementwise(OpType type);

// kMax and kMin apply to Reduce and AllReduce only.
enum class Reduction { kNone, kSum, kMean, kMax, kMin };
const char* reductionName(Reduction reduction);
enum class CompareDirection { kEq, kNe, kLt, kLe, kGt, kGe };
const char* compareDirectionName(CompareDirection direction);
// kRound: to the nearest integer, halves to even (int8 quantization); kFloor, kCeil: down and
// up to an integer; kSign: -1, 0 or 1 (0 for a zero of either sign); the trigonometric and
// hyperbolic functions and their inverses, in radians. Three read Op::alpha (and Selu
// Op::gamma), as ONNX defines them:
//   kLeakyRelu  x >= 0 ? x : alpha x
//   kElu        x >= 0 ? x : alpha (e^x - 1)
//   kSelu       gamma (x > 0 ? x : alpha (e^x - 1))
enum class UnaryKind {
  kAbs,
  kErf,
  kExp,
  kLog,
  kNeg,
  kReciprocal,
  kSigmoid,
  kSqrt,
  kTanh,
  kRound,
  kLeakyRelu,
  kElu,
  kSelu,
  kFloor,
  kCeil,
  kSign,
  kSin,
  kCos,
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kAsinh,
  kAcosh,
  kAtanh
};
const char* unaryKindName(UnaryKind kind);
// Whether the kind reads Op::alpha and Op::gamma.
bool isParametricUnary(UnaryKind kind);

// Geometry of a 2-D convolution (spatial dims in H, W order).
struct ConvGeometry {
  std::vector<int64_t> strides = {1, 1};
  std::vector<int64_t> pads = {0, 0, 0, 0};  // top, left, bottom, right
  std::vector<int64_t> dilations = {1, 1};
  int64_t group = 1;
};

// Geometry of a pooling window over r spatial dimensions (pads: r begins, then r ends).
struct PoolGeometry {
  bool max = true;  // max pooling, else average
  std::vector<int64_t> kernel = {1, 1};
  std::vector<int64_t> strides = {1, 1};
  std::vector<int64_t> pads = {0, 0, 0, 0};  // top, left, bottom, right
  std::vector<int64_t> dilations = {1, 1};
  bool ceil_mode = false;
  bool count_include_pad = false;     // average: divide by the window inside the padded input
  bool column_major_indices = false;  // argmax indices count the spatial dims in reverse (ONNX storage_order 1)
};

// Where an op runs (set by the placement pass).
enum class Unit { kUnplaced, kMxu, kVpu, kDma, kView, kIci };
const char* unitName(Unit unit);
// The optimizers of OptimizerUpdate; the formulas are in docs/frontend.md.
enum class OptimizerKind { kSgd, kMomentum, kAdam, kAdagrad, kLars };
const char* optimizerKindName(OptimizerKind kind);

// What one OptimizerUpdate writes. Each op has one output, written over the tensor it
// updates (Tensor::alias_of), so an optimizer with state is several ops per weight.
enum class UpdateTarget {
  kParameter,    // the weight; reads the states already updated this step
  kFirstState,   // momentum / LARS velocity, Adam's first moment, Adagrad's squared-gradient sum
  kSecondState,  // Adam's second moment
  kStep,         // the step counter: step + 1
};

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kSgd;
  double learning_rate = 0.01;          // times the value of the rate input, when the op has one
  int64_t warmup_steps = 0;             // > 0: the rate is scaled by min(1, (step + 1) / warmup_steps)
  double beta1 = 0.9;                   // momentum / LARS: the momentum; Adam: the first moment's decay
  double beta2 = 0.999;                 // Adam: the second moment's decay
  double epsilon = 1e-8;                // Adam, Adagrad: added to the root of the second moment
  double weight_decay = 0;              // L2: weight_decay x w added to the gradient (Adam with decoupled: AdamW)
  bool decoupled_weight_decay = false;  // Adam: AdamW's w -= rate x weight_decay x w
  double post_decay = 0;                // Adam: w' x (1 - post_decay) (ONNX norm_coefficient_post)
  double gradient_scale = 1;            // momentum: the gradient's coefficient from step 1 on (ONNX beta)
  bool nesterov = false;                // momentum
  double decay_factor = 0;              // Adagrad: rate / (1 + step x decay_factor)
  double trust_coefficient = 0.001;     // LARS: eta
  int64_t bias_correction_offset = 1;   // Adam: the power t is step + this (ONNX's Adam: 0, none at t = 0)
};

struct Op;
// Whether a state update (kFirstState, kSecondState) reads the parameter: only for coupled
// weight decay (L2 added to the gradient); a parameter update always does.
bool updateReadsParameter(const Op& op);

struct Op {
  std::string name;
  OpType type = OpType::kAdd;
  std::vector<int> inputs;
  std::vector<int> outputs;
  bool transpose_a = false;                          // MatMul
  bool transpose_b = false;                          // MatMul
  double scalar = 0;                                 // Scale: the factor; SgdUpdate: the learning rate
  int64_t axis = 0;                                  // Softmax, LogSoftmax: non-negative
  Reduction reduction = Reduction::kMean;            // NllLoss
  std::optional<int64_t> ignore_index;               // NllLoss: labels equal to it count for nothing
  UnaryKind unary = UnaryKind::kAbs;                 // Unary, UnaryGrad
  double alpha = 0;                                  // Unary, UnaryGrad: LeakyRelu's slope, Elu's and Selu's alpha
  double gamma = 1;                                  // Unary, UnaryGrad: Selu's scale
  std::vector<int64_t> perm;                         // Transpose: output dim i is input dim perm[i]; Reduce: the axes
  bool keepdims = true;                              // Reduce
  std::vector<int64_t> starts;                       // Slice, SliceGrad: first index per dimension
  std::vector<int64_t> steps;                        // Slice, SliceGrad: stride per dimension (negative walks back)
  ConvGeometry conv;                                 // Conv and its gradients
  PoolGeometry pool;                                 // Pool and its gradient
  CompareDirection compare = CompareDirection::kEq;  // Compare
  int64_t replicas = 1;                              // AllReduce: the replica group's size
  int64_t group_stride = 1;       // AllReduce: chip ids between consecutive members of a group (1: consecutive chips)
  Phase phase = Phase::kForward;  // set as the op is appended (see Phase)

  // Compiler annotations, set by frontend/passes (not by the builders).
  int fusion_group = -1;  // index of the op leading the fusion group this op is in, or -1
  Unit placement = Unit::kUnplaced;
  std::vector<int64_t> mxu_padded;  // MatMul, Conv*: the GEMM's M, K, N rounded up to the MXU tile
  OptimizerConfig optimizer;        // OptimizerUpdate
  UpdateTarget update_target = UpdateTarget::kParameter;  // OptimizerUpdate
  bool has_rate_input = false;                            // OptimizerUpdate: inputs[3] is a scalar rate
};

class Graph {
 public:
  int addInput(const std::string& name, Shape shape, DType dtype, TensorRole role);
  int addWeight(const std::string& name, Shape shape, DType dtype);

  // Builders: check operands, infer the output, append the op, return the output id.
  int matmul(const std::string& name, int a, int b, bool transpose_a, bool transpose_b,
             TensorRole role = TensorRole::kActivation);
  // Add, Sub, Mul, Div, Maximum or Minimum: same dtypes, shapes that broadcast.
  int binary(OpType type, const std::string& name, int a, int b, TensorRole role = TensorRole::kActivation);
  // A bool tensor of the broadcast shape; a and b share a dtype.
  int compare(CompareDirection direction, const std::string& name, int a, int b,
              TensorRole role = TensorRole::kActivation);
  // kSum, kMax or kMin across a group of `replicas` (>= 1). A group of more runs on the
  // interconnect (frontend/passes/data_parallel.hpp), or on the CPU across the replicas of
  // reference::CpuExecutor::runReplicas.
  int allReduce(const std::string& name, int x, Reduction reduction, int64_t replicas,
                TensorRole role = TensorRole::kActivation);
  int add(const std::string& name, int a, int b, TensorRole role = TensorRole::kActivation) {
    return binary(OpType::kAdd, name, a, b, role);
  }
  int scale(const std::string& name, int x, double scalar, TensorRole role = TensorRole::kActivation);
  int relu(const std::string& name, int x);
  int reluGrad(const std::string& name, int dy, int x);
  int reshape(const std::string& name, int x, Shape shape, TensorRole role = TensorRole::kActivation);
  int reduceSumTo(const std::string& name, int x, Shape shape, TensorRole role = TensorRole::kGradient);
  int softmaxCrossEntropy(const std::string& name, int logits, int labels);
  int softmaxCrossEntropyGrad(const std::string& name, int logits, int labels);
  int sgdUpdate(const std::string& name, int weight, int gradient, double learning_rate);
  int addConstant(const std::string& name, Shape shape, DType dtype);
  // A parametric kind (isParametricUnary) needs the overload that takes its alpha and gamma.
  int unary(UnaryKind kind, const std::string& name, int x, TensorRole role = TensorRole::kActivation);
  int unary(UnaryKind kind, const std::string& name, int x, double alpha, double gamma = 1,
            TensorRole role = TensorRole::kActivation);
  int unaryGrad(UnaryKind kind, const std::string& name, int dy, int x, int y, double alpha = 0, double gamma = 1);
  // An empty perm reverses the dimensions, as ONNX's default does.
  int transpose(const std::string& name, int x, std::vector<int64_t> perm, TensorRole role = TensorRole::kActivation);
  // Reduction::kSum, kMean, kMax or kMin over `axes` (non-negative, any order; empty = all).
  int reduce(const std::string& name, int x, Reduction reduction, std::vector<int64_t> axes, bool keepdims);
  int broadcastTo(const std::string& name, int x, Shape shape, TensorRole role = TensorRole::kGradient);
  int concat(const std::string& name, const std::vector<int>& inputs, int64_t axis,
             TensorRole role = TensorRole::kActivation);
  int slice(const std::string& name, int x, int64_t axis, int64_t start, int64_t length,
            TensorRole role = TensorRole::kGradient);
  // out has `shape`; out[i] reads x[starts[d] + i[d] * steps[d]], every index inside x.
  int stridedSlice(const std::string& name, int x, std::vector<int64_t> starts, std::vector<int64_t> steps, Shape shape,
                   TensorRole role = TensorRole::kActivation);
  int sliceGrad(const std::string& name, int dy, const Op& slice, const Shape& x_shape);
  int gather(const std::string& name, int data, int indices, int64_t axis);
  // Also a forward op: a scatter-add of dy into zeros (ONNX's ScatterND, ScatterElements), with
  // an activation role.
  int gatherGrad(const std::string& name, int dy, int indices, const Shape& data_shape, int64_t axis,
                 TensorRole role = TensorRole::kGradient);
  int pow(const std::string& name, int a, int b);
  // Elementwise conversion of x to `dtype`.
  int cast(const std::string& name, int x, DType dtype, TensorRole role = TensorRole::kActivation);
  int powGrad(const std::string& name, int dy, const Op& pow, bool of_exponent);
  int where(const std::string& name, int condition, int x, int y, TensorRole role = TensorRole::kActivation);
  // x with low[d] elements before and high[d] after it along each dimension d (negative: cut
  // off): `fill` (a scalar tensor) for kConstant, the border element for kEdge, the elements
  // mirrored about the border for kReflect (ONNX Pad's modes). Slices, broadcasts and concats.
  int pad(const std::string& name, int x, const std::vector<int64_t>& low, const std::vector<int64_t>& high,
          PadMode mode, int fill = -1);
  int pool(const std::string& name, int x, const PoolGeometry& geometry);
  int poolGrad(const std::string& name, int dy, int x, const PoolGeometry& geometry);
  int poolArgmax(const std::string& name, int x, const PoolGeometry& geometry);
  int conv(const std::string& name, int x, int w, const ConvGeometry& geometry);
  int convGradInput(const std::string& name, int dy, int w, const Shape& x_shape, const ConvGeometry& geometry);
  // ONNX ConvTranspose of x [N, C, H, W] by w [C, M / group, KH, KW] into `out_shape` [N, M, OH, OW]:
  // the input gradient of the Conv of an `out_shape` tensor by w (kConvGradInput), whose output
  // must then be x's shape.
  int convTranspose(const std::string& name, int x, int w, const Shape& out_shape, const ConvGeometry& geometry);
  int convGradWeight(const std::string& name, int x, int dy, const Shape& w_shape, const ConvGeometry& geometry);
  // axis may be negative (counted from the end).
  int softmax(const std::string& name, int x, int64_t axis, bool log);
  // logp [N, C, d...], labels [N, d...] (integers), weights [C] or -1.
  int nllLoss(const std::string& name, int logp, int labels, int weights, Reduction reduction,
              std::optional<int64_t> ignore_index);

  // Training builders (graph_training.cpp).
  // mean((x - targets)^2) over every element; targets is float, of x's shape.
  int mseLoss(const std::string& name, int x, int targets);
  int mseLossGrad(const std::string& name, int x, int targets);
  // The gradient of `loss` (an NllLoss with sum or mean reduction) with respect to its scores.
  int nllLossGrad(const std::string& name, const Op& loss);
  // One OptimizerUpdate of `parameter` (or of one of its states), from its gradient, the
  // step counter (an int64 scalar), an optional scalar rate (-1: none) and `extra`:
  //   kFirstState / kSecondState: the state it overwrites (LARS: then ||w|| and ||g||, scalars);
  //   kParameter: the states this step already updated (momentum/LARS v, Adam m and v, Adagrad h).
  // The op's inputs: a parameter update reads [parameter, gradient, step, rate?, states...];
  // a state update [gradient, step, rate?, state, parameter?, ||w||, ||g||] with the parameter
  // only when coupled weight decay needs it (updateReadsParameter).
  // kStep takes the step counter as `parameter` and ignores the others (pass -1).
  int optimizerUpdate(const std::string& name, const OptimizerConfig& config, UpdateTarget target, int parameter,
                      int gradient, int step, int rate, const std::vector<int>& extra);
  // Appends a copy of `op`, an op of `source` (this graph or another), reading `inputs`, which
  // must have the shapes and dtypes of op's inputs; the output is like op's (an alias of op's
  // aliased input becomes one of its replacement). Returns the output id.
  int cloneOp(const Graph& source, const Op& op, const std::vector<int>& inputs, const std::string& name);
  // cloneOp with another dtype: `inputs` have op's input shapes, float inputs may be another
  // float dtype, and the output is `dtype` (a precision policy's rewrite).
  int cloneOpAs(const Graph& source, const Op& op, const std::vector<int>& inputs, const std::string& name,
                DType dtype);

  void markOutput(int tensor) { m_outputs.push_back(tensor); }
  // Gives an existing tensor a user-facing name (an ONNX value name, say).
  void rename(int tensor, const std::string& name) { m_tensors.at(static_cast<size_t>(tensor)).name = name; }
  // Turns an input weight into a constant (a statistic, not trained by gradients).
  void freeze(int tensor);

  const Tensor& tensor(int id) const { return m_tensors.at(static_cast<size_t>(id)); }
  const std::vector<Tensor>& tensors() const { return m_tensors; }
  const std::vector<Op>& ops() const { return m_ops; }
  const std::vector<int>& outputs() const { return m_outputs; }
  // The op that produces `tensor`, or nullptr for inputs and weights.
  const Op* producer(int tensor) const;

  std::string toString() const;

  // For passes: a copy with the ops in `order` (a permutation of op indices that must
  // still be topological; throws otherwise), and access to the ops' annotations.
  Graph reordered(const std::vector<size_t>& order) const;
  Op& annotate(size_t op) { return m_ops.at(op); }
  // The phase of the ops appended from now on (see Phase). A copy of the graph keeps it.
  void setPhase(Phase phase) { m_phase = phase; }
  Phase phase() const { return m_phase; }
  // For passes that split tensors over chips (tensor_parallel): gives a tensor a new
  // shape of its dtype. The caller keeps every op that reads or writes it consistent.
  void setShape(int tensor, Shape shape) { m_tensors.at(static_cast<size_t>(tensor)).shape = std::move(shape); }
  // Removes the ops whose outputs nothing reads (and that are not outputs, losses or in-place updates).
  Graph withoutDeadOps() const;

  // For passes: an edit of this graph's ops, applied by rewired(). Tensor ids stay.
  struct Rewrite {
    explicit Rewrite(const Graph& graph)
        : remove(graph.ops().size(), false), replace(graph.ops().size()), redirect(graph.tensors().size(), -1) {}
    std::vector<bool> remove;                // per op: drop it
    std::vector<std::optional<Op>> replace;  // per op: run this op instead; it writes the same outputs
    std::vector<int> redirect;               // per tensor: what reads it reads this tensor instead (-1: itself)
  };
  // A copy with `rewrite` applied, ops in their order. Redirects follow chains and apply to op
  // inputs, Tensor::alias_of and graph outputs; a redirected graph output's new tensor takes its
  // name and role (callers look outputs up by name), so it must be computed and not an output
  // already. A replacement MatMul, Transpose, Reshape or Scale is checked by its builder (the
  // output's shape and dtype must stay; a Reshape aliases its new input); any other must read
  // tensors of the old inputs' shapes and dtypes. Throws kInternal when an op would read a
  // tensor no kept op writes before it, or on a malformed rewrite.
  Graph rewired(const Rewrite& rewrite) const;

 private:
  int newTensor(const std::string& name, Shape shape, DType dtype, TensorRole role);
  int append(Op op, const std::string& out_name, Shape shape, DType dtype, TensorRole role);
  const Tensor& checked(int id, const std::string& op_name) const;
  // rewired(): checks `op`, replacing `old`, over this graph's tensors and sets its output's alias.
  void checkReplacement(const Op& old, const Op& op);

  std::vector<Tensor> m_tensors;
  std::vector<Op> m_ops;
  std::vector<int> m_outputs;
  std::vector<int> m_producer;  // per tensor: index into m_ops, or -1
  Phase m_phase = Phase::kForward;
};

}  // namespace tpusim::ir
