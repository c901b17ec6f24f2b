#include "reference/cuda/op_launch.hpp"

#include <algorithm>
#include <utility>

#include "sim/common/error.hpp"

namespace tpusim::reference::cuda {

namespace {

using ir::OpType;

// Element strides of a tensor of `shape` read at `target`'s coordinates (right-aligned;
// 0 along a dimension it has as 1 or lacks).
Strides broadcastStrides(const ir::Shape& shape, const ir::Shape& target) {
  Strides strides;
  int64_t stride = 1;
  const size_t offset = target.size() - shape.size();
  for (size_t d = target.size(); d-- > offset;) {
    const int64_t dim = shape[d - offset];
    strides.at[d] = dim == 1 ? 0 : stride;
    stride *= dim;
  }
  return strides;
}

Strides rowMajor(const ir::Shape& shape) { return broadcastStrides(shape, shape); }

void setDims(const ir::Shape& shape, int& rank, int64_t* dims) {
  rank = static_cast<int>(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) dims[d] = shape[d];
}

int64_t outerOf(const ir::Shape& shape, int64_t axis) {
  return ir::elementCount(ir::Shape(shape.begin(), shape.begin() + axis));
}
int64_t innerOf(const ir::Shape& shape, int64_t axis) {
  return ir::elementCount(ir::Shape(shape.begin() + axis + 1, shape.end()));
}

class Planner {
 public:
  Planner(Device& device, const ir::Graph& graph, const ir::Op& op, const std::vector<Ref>& refs)
      : m_device(device), m_graph(graph), m_op(op), m_refs(refs) {}

  // Where the op's kernels report a fault, and what runs it, once plan() has run.
  const KernelFault& fault() const { return m_fault; }
  const std::string& kernel() const { return m_kernel; }

  OpLaunch plan() {
    switch (m_op.type) {
      case OpType::kMatMul: return matmul();
      case OpType::kConv:
      case OpType::kConvGradInput:
      case OpType::kConvGradWeight: return conv();
      case OpType::kAdd: return pointwise(Pointwise::kAdd, 2);
      case OpType::kSub: return pointwise(Pointwise::kSub, 2);
      case OpType::kMul: return pointwise(Pointwise::kMul, 2);
      case OpType::kDiv: return pointwise(Pointwise::kDiv, 2);
      case OpType::kMaximum: return pointwise(Pointwise::kMaximum, 2);
      case OpType::kMinimum: return pointwise(Pointwise::kMinimum, 2);
      case OpType::kScale: return pointwise(Pointwise::kScale, 1, 0, m_op.scalar);
      case OpType::kRelu: return pointwise(Pointwise::kRelu, 1);
      case OpType::kReluGrad: return pointwise(Pointwise::kReluGrad, 2);
      case OpType::kUnary: return pointwise(Pointwise::kUnary, 1, static_cast<int32_t>(m_op.unary));
      case OpType::kUnaryGrad: return pointwise(Pointwise::kUnaryGrad, 3, static_cast<int32_t>(m_op.unary));
      case OpType::kCompare: return pointwise(Pointwise::kCompare, 2, static_cast<int32_t>(m_op.compare));
      case OpType::kWhere: return pointwise(Pointwise::kWhere, 3);
      case OpType::kPow: return pointwise(Pointwise::kPow, 2);
      case OpType::kPowGrad:
        return pointwise(m_op.axis == 0 ? Pointwise::kPowGradBase : Pointwise::kPowGradExponent, 3);
      case OpType::kCast: return pointwise(Pointwise::kCast, 1);
      case OpType::kSgdUpdate: return pointwise(Pointwise::kSgd, 2, 0, m_op.scalar);
      case OpType::kBroadcastTo:
      case OpType::kAllReduce: return pointwise(Pointwise::kCopy, 1);  // one replica: the reduction of x is x
      case OpType::kMseLossGrad:
        return pointwise(Pointwise::kMseLossGrad, 2, 0,
                         2.0 / static_cast<double>(std::max<int64_t>(1, ir::elementCount(shape(input(0))))));
      case OpType::kReduceSumTo: return reduce(Reduction::kSum, shape(output()));
      case OpType::kReduce: return reduceOp();
      case OpType::kTranspose: return transpose();
      case OpType::kSlice: return slice();
      case OpType::kSliceGrad: return sliceGrad();
      case OpType::kConcat: return concat();
      case OpType::kGather: return gather();
      case OpType::kGatherGrad: return gatherGrad();
      case OpType::kSoftmax:
      case OpType::kLogSoftmax: return softmax();
      case OpType::kSoftmaxCrossEntropy:
      case OpType::kSoftmaxCrossEntropyGrad: return crossEntropy();
      case OpType::kNllLoss:
      case OpType::kNllLossGrad: return nll();
      case OpType::kMseLoss: return mse();
      case OpType::kOptimizerUpdate: return optimizer();
      case OpType::kPool:
      case OpType::kPoolArgmax:
      case OpType::kPoolGrad: return pool();
      case OpType::kReshape: return aliased();
    }
    throw Error(ErrorKind::kInternal, "no CUDA launch for op type " + std::string(ir::opTypeName(m_op.type)));
  }

 private:
  int input(size_t i) const { return m_op.inputs[i]; }
  int output() const { return m_op.outputs[0]; }
  const ir::Shape& shape(int tensor) const { return m_graph.tensor(tensor).shape; }
  const Ref& ref(int tensor) const { return m_refs[static_cast<size_t>(tensor)]; }

  // A float buffer of `count` elements, for an op's partial results.
  float* scratch(int64_t count) {
    return static_cast<float*>(m_device.allocate(static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(float)));
  }

  // The float sums in `sums` rounded into the output (a bf16 or f16 output accumulates in float first).
  PointwiseArgs castFrom(float* sums) const {
    PointwiseArgs cast;
    cast.kind = Pointwise::kCast;
    setDims(shape(output()), cast.rank, cast.dims);
    cast.count = ir::elementCount(shape(output()));
    cast.inputs = 1;
    cast.in[0] = {sums, Elem::kF32};
    cast.strides[0] = rowMajor(shape(output()));
    cast.out = ref(output());
    return cast;
  }

  OpLaunch pointwise(Pointwise kind, int inputs, int32_t detail = 0, double scalar = 0) {
    PointwiseArgs a;
    a.kind = kind;
    a.detail = detail;
    a.scalar = scalar;
    a.alpha = m_op.alpha;  // read by Unary and UnaryGrad only
    a.gamma = m_op.gamma;
    const ir::Shape& out = shape(output());
    setDims(out, a.rank, a.dims);
    a.count = ir::elementCount(out);
    a.inputs = inputs;
    for (int k = 0; k < inputs; ++k) {
      a.in[k] = ref(input(static_cast<size_t>(k)));
      a.strides[k] = broadcastStrides(shape(input(static_cast<size_t>(k))), out);
    }
    a.out = ref(output());
    if (kind == Pointwise::kDiv && !isFloating(a.out.elem)) a.fault = faultSlot(KernelFault::Kind::kDivisionByZero);
    return [a](Device& device) { device.pointwise(a); };
  }

  // A slot for the op's kernels to report a fault of `kind` in (KernelFault), set to kNoFault.
  uint64_t* faultSlot(KernelFault::Kind kind, Ref values = {}, int64_t length = 0) {
    auto* slot = static_cast<uint64_t*>(m_device.allocate(sizeof(uint64_t)));
    m_device.upload(slot, &kNoFault, sizeof kNoFault);
    m_fault = {slot, kind, values, length};
    return slot;
  }

  OpLaunch aliased() {  // a Reshape: its output aliases its input
    m_kernel = "none: its output aliases its input";
    return [](Device&) {};
  }

  OpLaunch matmul() {
    GemmArgs g;
    const ir::Shape& a = shape(input(0));
    const ir::Shape& b = shape(input(1));
    const ir::Shape& out = shape(output());
    g.transpose_a = m_op.transpose_a;
    g.transpose_b = m_op.transpose_b;
    g.m = out[out.size() - 2];
    g.n = out.back();
    g.k = m_op.transpose_a ? a[a.size() - 2] : a.back();
    g.batch = ir::elementCount(ir::Shape(out.begin(), out.end() - 2));
    g.a = ref(input(0));
    g.b = ref(input(1));
    g.c = ref(output());
    g.a_stride = a.size() > 2 ? g.m * g.k : 0;
    g.b_stride = b.size() > 2 ? g.k * g.n : 0;
    if (multipliesInt8(g.a)) g.plan = m_device.planGemm(g);
    m_kernel = m_device.gemmKernel(g);
    return [g](Device& device) { device.gemm(g); };
  }

  OpLaunch conv() {
    ConvArgs c;
    // Inputs: Conv (x, w) -> y; ConvGradInput (dy, w) -> dx; ConvGradWeight (x, dy) -> dw.
    int x = input(0), w = input(1), y = output();
    if (m_op.type == OpType::kConvGradInput) {
      c.pass = ConvPass::kGradInput;
      x = output();
      w = input(1);
      y = input(0);
    } else if (m_op.type == OpType::kConvGradWeight) {
      c.pass = ConvPass::kGradWeight;
      x = input(0);
      w = output();
      y = input(1);
    }
    for (int d = 0; d < 4; ++d) {
      c.x_dims[d] = shape(x)[static_cast<size_t>(d)];
      c.w_dims[d] = shape(w)[static_cast<size_t>(d)];
      c.y_dims[d] = shape(y)[static_cast<size_t>(d)];
    }
    for (int d = 0; d < 2; ++d) {
      c.strides[d] = m_op.conv.strides[static_cast<size_t>(d)];
      c.dilations[d] = m_op.conv.dilations[static_cast<size_t>(d)];
    }
    c.group = m_op.conv.group;
    c.x = ref(x);
    c.w = ref(w);
    c.y = ref(y);
    const std::vector<int64_t>& pads = m_op.conv.pads;  // top, left, bottom, right
    // An int8 convolution is the project's kernel, which takes every padding as it is.
    if (multipliesInt8(c.x)) {
      std::copy(pads.begin(), pads.end(), c.pads);
      m_kernel = m_device.convKernel(c);
      return [c](Device& device) { device.conv(c); };
    }
    // cuDNN pads both sides of a dimension alike. Where one side has more (TensorFlow's SAME
    // padding at stride 2), x lives in a zeroed buffer with that extra on its side, and cuDNN
    // pads the rest: the zeros add nothing, so the sums are those of the padded convolution.
    int64_t before[2] = {}, grown[2] = {};
    for (int d = 0; d < 2; ++d) {
      const int64_t both = std::min(pads[static_cast<size_t>(d)], pads[static_cast<size_t>(d) + 2]);
      c.pads[d] = c.pads[d + 2] = both;
      before[d] = pads[static_cast<size_t>(d)] - both;
      grown[d] = before[d] + pads[static_cast<size_t>(d) + 2] - both;
    }
    if (grown[0] == 0 && grown[1] == 0) {
      c.plan = m_device.planConv(c);
      m_kernel = m_device.convKernel(c);
      return [c](Device& device) { device.conv(c); };
    }
    const ir::Shape& real = shape(x);
    const ir::Shape padded{real[0], real[1], real[2] + grown[0], real[3] + grown[1]};
    const Strides padded_strides = rowMajor(padded);
    c.x = {m_device.allocate(static_cast<size_t>(ir::elementCount(padded)) * elementBytes(c.x.elem)), c.x.elem};
    c.x_dims[2] = padded[2];
    c.x_dims[3] = padded[3];
    // x's elements at their place in the padded buffer (the border stays zero).
    CopyArgs place;
    setDims(real, place.rank, place.dims);
    place.count = ir::elementCount(real);
    place.out_base = before[0] * padded_strides.at[2] + before[1] * padded_strides.at[3];
    place.out_strides = padded_strides;
    place.in_strides = rowMajor(real);
    c.plan = m_device.planConv(c);
    m_kernel = m_device.convKernel(c) + ", with a tpusim copy for the uneven pads";
    if (c.pass == ConvPass::kGradInput) {  // dx of the padded x, then its interior
      CopyArgs crop = place;
      std::swap(crop.in_base, crop.out_base);
      std::swap(crop.in_strides, crop.out_strides);
      crop.in = c.x;
      crop.out = ref(x);
      return [c, crop](Device& device) {
        device.conv(c);
        device.copy(crop);
      };
    }
    place.in = ref(x);
    place.out = c.x;
    return [c, place](Device& device) {
      device.copy(place);
      device.conv(c);
    };
  }

  // x reduced to `kept` (right-aligned to x: ReduceSumTo's target, or Reduce's dims kept as 1).
  OpLaunch reduce(Reduction kind, const ir::Shape& kept) {
    ReduceArgs r;
    r.kind = kind;
    const ir::Shape& x = shape(input(0));
    r.rank = static_cast<int>(x.size());
    const size_t offset = x.size() - kept.size();
    for (size_t d = 0; d < x.size(); ++d) {
      r.x_dims[d] = x[d];
      r.out_dims[d] = d >= offset ? kept[d - offset] : 1;
    }
    r.out_count = ir::elementCount(kept);
    r.x = ref(input(0));
    r.out = ref(output());
    if (isFloating(r.x.elem)) {
      r.chunk = m_device.reduceChunk(r.out_count, reducedTerms(r));
      if (r.chunk > 0) r.partials = scratch(r.out_count * reduceChunks(r));
    }
    return [r](Device& device) { device.reduce(r); };
  }

  OpLaunch reduceOp() {
    ir::Shape kept = shape(input(0));
    for (int64_t axis : m_op.perm) kept[static_cast<size_t>(axis)] = 1;
    switch (m_op.reduction) {
      case ir::Reduction::kMax: return reduce(Reduction::kMax, kept);
      case ir::Reduction::kMin: return reduce(Reduction::kMin, kept);
      case ir::Reduction::kMean: return reduce(Reduction::kMean, kept);
      default: return reduce(Reduction::kSum, kept);
    }
  }

  static OpLaunch copying(const CopyArgs& c) {
    return [c](Device& device) { device.copy(c); };
  }

  OpLaunch transpose() const {
    CopyArgs c;
    const ir::Shape& out = shape(output());
    setDims(out, c.rank, c.dims);
    c.count = ir::elementCount(out);
    const Strides x = rowMajor(shape(input(0)));
    for (size_t d = 0; d < out.size(); ++d) c.in_strides.at[d] = x.at[static_cast<size_t>(m_op.perm[d])];
    c.out_strides = rowMajor(out);
    c.in = ref(input(0));
    c.out = ref(output());
    return copying(c);
  }

  // The strided view `view` of a tensor of `whole`: its base offset and strides.
  void stridedView(const ir::Shape& whole, int64_t& base, Strides& strides) const {
    const Strides s = rowMajor(whole);
    base = 0;
    for (size_t d = 0; d < whole.size(); ++d) {
      base += m_op.starts[d] * s.at[d];
      strides.at[d] = m_op.steps[d] * s.at[d];
    }
  }

  OpLaunch slice() const {
    CopyArgs c;
    const ir::Shape& out = shape(output());
    setDims(out, c.rank, c.dims);
    c.count = ir::elementCount(out);
    stridedView(shape(input(0)), c.in_base, c.in_strides);
    c.out_strides = rowMajor(out);
    c.in = ref(input(0));
    c.out = ref(output());
    return copying(c);
  }

  OpLaunch sliceGrad() const {
    // dy copied into zeros where the slice read (its positions are distinct).
    CopyArgs c;
    const ir::Shape& dy = shape(input(0));
    setDims(dy, c.rank, c.dims);
    c.count = ir::elementCount(dy);
    c.in_strides = rowMajor(dy);
    stridedView(shape(output()), c.out_base, c.out_strides);
    c.in = ref(input(0));
    c.out = ref(output());
    const size_t bytes = static_cast<size_t>(ir::elementCount(shape(output()))) * elementBytes(c.out.elem);
    return [c, bytes](Device& device) {
      device.zero(c.out.data, bytes);
      device.copy(c);
    };
  }

  OpLaunch concat() const {
    const ir::Shape& out = shape(output());
    const Strides out_strides = rowMajor(out);
    std::vector<CopyArgs> parts;
    int64_t offset = 0;
    for (int id : m_op.inputs) {
      CopyArgs c;
      const ir::Shape& part = shape(id);
      setDims(part, c.rank, c.dims);
      c.count = ir::elementCount(part);
      c.in_strides = rowMajor(part);
      c.out_strides = out_strides;
      c.out_base = offset * out_strides.at[static_cast<size_t>(m_op.axis)];
      c.in = ref(id);
      c.out = ref(output());
      parts.push_back(c);
      offset += part[static_cast<size_t>(m_op.axis)];
    }
    return [parts](Device& device) {
      for (const CopyArgs& c : parts) device.copy(c);
    };
  }

  GatherArgs gatherArgs(const ir::Shape& data) {
    GatherArgs g;
    g.outer = outerOf(data, m_op.axis);
    g.length = data[static_cast<size_t>(m_op.axis)];
    g.inner = innerOf(data, m_op.axis);
    g.indices_count = ir::elementCount(shape(input(1)));
    g.indices = ref(input(1));
    g.fault = faultSlot(KernelFault::Kind::kIndex, g.indices, g.length);
    return g;
  }

  OpLaunch gather() {
    GatherArgs g = gatherArgs(shape(input(0)));
    g.data = ref(input(0));
    g.out = ref(output());
    return [g](Device& device) { device.gather(g); };
  }

  OpLaunch gatherGrad() {
    GatherArgs g = gatherArgs(shape(output()));
    g.data = ref(input(0));
    const int64_t count = ir::elementCount(shape(output()));
    const bool f32 = ref(output()).elem == Elem::kF32;
    float* sums = f32 ? static_cast<float*>(ref(output()).data) : scratch(count);
    g.out = {sums, Elem::kF32};
    const PointwiseArgs cast = castFrom(sums);
    return [g, f32, cast, count](Device& device) {
      device.zero(g.out.data, static_cast<size_t>(count) * sizeof(float));
      device.gatherGrad(g);
      if (!f32) device.pointwise(cast);
    };
  }

  OpLaunch softmax() const {
    SoftmaxArgs s;
    const ir::Shape& x = shape(input(0));
    s.outer = outerOf(x, m_op.axis);
    s.length = x[static_cast<size_t>(m_op.axis)];
    s.inner = innerOf(x, m_op.axis);
    s.log = m_op.type == OpType::kLogSoftmax;
    s.x = ref(input(0));
    s.out = ref(output());
    return [s](Device& device) { device.softmax(s); };
  }

  OpLaunch crossEntropy() {
    CrossEntropyArgs c;
    const ir::Shape& logits = shape(input(0));
    c.rows = logits[0];
    c.classes = logits[1];
    c.logits = ref(input(0));
    c.labels = ref(input(1));
    c.out = ref(output());
    const bool gradient = m_op.type == OpType::kSoftmaxCrossEntropyGrad;
    if (!gradient) c.terms = scratch(c.rows);
    c.fault = faultSlot(KernelFault::Kind::kLabelOfRow, c.labels, c.classes);
    return [c, gradient](Device& device) { device.crossEntropy(c, gradient); };
  }

  OpLaunch nll() {
    NllArgs a;
    const ir::Shape& logp = shape(input(0));
    a.n = logp[0];
    a.c = logp[1];
    a.d = ir::elementCount(ir::Shape(logp.begin() + 2, logp.end()));
    a.gradient = m_op.type == OpType::kNllLossGrad;
    a.reduction = m_op.reduction == ir::Reduction::kNone ? 0 : m_op.reduction == ir::Reduction::kSum ? 1 : 2;
    a.has_ignore = m_op.ignore_index.has_value();
    a.ignore_index = m_op.ignore_index.value_or(0);
    a.has_weights = m_op.inputs.size() > 2;
    a.logp = ref(input(0));
    a.labels = ref(input(1));
    if (a.has_weights) a.weights = ref(input(2));
    a.out = ref(output());
    a.terms = scratch(a.n * a.d);
    a.weighed = scratch(a.n * a.d);
    a.fault = faultSlot(KernelFault::Kind::kLabelAtPosition, a.labels, a.c);
    const size_t bytes = static_cast<size_t>(ir::elementCount(shape(output()))) * elementBytes(a.out.elem);
    return [a, bytes](Device& device) {
      if (a.gradient) device.zero(a.out.data, bytes);
      device.nll(a);
    };
  }

  OpLaunch mse() const {
    MseArgs a;
    a.count = ir::elementCount(shape(input(0)));
    a.x = ref(input(0));
    a.t = ref(input(1));
    a.out = ref(output());
    return [a](Device& device) { device.mse(a); };
  }

  OpLaunch optimizer() const {
    OptimizerArgs a;
    const ir::OptimizerConfig& c = m_op.optimizer;
    a.config = {static_cast<Optimizer>(c.kind), c.learning_rate, c.warmup_steps, c.beta1, c.beta2, c.epsilon,
                c.weight_decay, c.decoupled_weight_decay, c.post_decay, c.gradient_scale, c.nesterov,
                c.decay_factor, c.trust_coefficient, c.bias_correction_offset};
    a.target = static_cast<Target>(m_op.update_target);
    a.count = ir::elementCount(shape(output()));
    a.out = ref(output());
    if (a.target == Target::kStep) {
      a.step = ref(input(0));
      return [a](Device& device) { device.optimizer(a); };
    }
    // Unpacked in the order graph.hpp gives (optimizerUpdate), as the CPU executor does.
    const bool state_update = a.target != Target::kParameter;
    size_t next = 0;
    if (!state_update) a.parameter = ref(input(next++));
    a.gradient = ref(input(next++));
    a.step = ref(input(next++));
    if (m_op.has_rate_input) a.rate_input = ref(input(next++));
    if (state_update) {
      a.state[a.states++] = ref(input(next++));
      if (ir::updateReadsParameter(m_op)) a.parameter = ref(input(next++));
    } else {
      while (next < m_op.inputs.size() && a.states < 2) a.state[a.states++] = ref(input(next++));
    }
    for (int s = 0; next < m_op.inputs.size() && s < 2; ++s) a.scalar[s] = ref(input(next++));
    return [a](Device& device) { device.optimizer(a); };
  }

  OpLaunch pool() {
    PoolArgs p;
    const int x = m_op.type == OpType::kPoolGrad ? input(1) : input(0);
    const ir::Shape& xs = shape(x);
    const ir::Shape& ys = shape(m_op.type == OpType::kPoolGrad ? input(0) : output());
    const ir::PoolGeometry& g = m_op.pool;
    p.rank = static_cast<int>(xs.size()) - 2;
    p.planes = xs[0] * xs[1];
    for (int d = 0; d < p.rank; ++d) {
      const auto i = static_cast<size_t>(d);
      p.x_spatial[d] = xs[i + 2];
      p.y_spatial[d] = ys[i + 2];
      p.kernel[d] = g.kernel[i];
      p.strides[d] = g.strides[i];
      p.dilations[d] = g.dilations[i];
      p.pads[d] = g.pads[i];
      p.pads[d + p.rank] = g.pads[i + static_cast<size_t>(p.rank)];
    }
    p.max = g.max;
    p.count_include_pad = g.count_include_pad;
    p.column_major_indices = g.column_major_indices;
    p.x = ref(x);
    if (m_op.type == OpType::kPool) {
      p.y = ref(output());
      p.plan = m_device.planPool(p);
      m_kernel = m_device.poolKernel(p);
      return [p](Device& device) { device.pool(p); };
    }
    if (m_op.type == OpType::kPoolArgmax) {
      p.y = ref(output());
      return [p](Device& device) { device.poolArgmax(p); };
    }
    p.y = ref(input(0));
    const bool f32 = ref(output()).elem == Elem::kF32;
    p.dx = f32 ? static_cast<float*>(ref(output()).data) : scratch(ir::elementCount(xs));
    const PointwiseArgs cast = castFrom(p.dx);
    return [p, f32, cast](Device& device) {
      device.poolGrad(p);
      if (!f32) device.pointwise(cast);
    };
  }

  Device& m_device;
  const ir::Graph& m_graph;
  const ir::Op& m_op;
  const std::vector<Ref>& m_refs;
  KernelFault m_fault;  // set by faultSlot
  std::string m_kernel = kProjectKernel;  // set where a library (or no kernel) runs the op
};

}  // namespace

PlannedOp planOp(Device& device, const ir::Graph& graph, const ir::Op& op, const std::vector<Ref>& refs) {
  Planner planner(device, graph, op, refs);
  OpLaunch launch = planner.plan();
  return {std::move(launch), planner.fault(), planner.kernel()};
}

}  // namespace tpusim::reference::cuda
