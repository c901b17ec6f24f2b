#include "reference/cpu/cpu_executor.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <type_traits>

#include "reference/cpu/broadcast.hpp"
#include "reference/cpu/conv.hpp"
#include "reference/cpu/kernels.hpp"
#include "reference/cpu/layout.hpp"
#include "reference/cpu/pool.hpp"
#include "reference/cpu/training_kernels.hpp"
#include "reference/feeds.hpp"
#include "sim/common/error.hpp"
#include "sim/common/integer_arith.hpp"
#include "sim/common/numerics.hpp"

namespace tpusim::reference {

namespace {

using ir::OpType;
using ir::TensorValue;

// Maximum and minimum propagate NaN, as XLA's do.
template <typename T>
T floatMax(T x, T y) {
  return std::isnan(x) || std::isnan(y) ? std::numeric_limits<T>::quiet_NaN() : std::max(x, y);
}
template <typename T>
T floatMin(T x, T y) {
  return std::isnan(x) || std::isnan(y) ? std::numeric_limits<T>::quiet_NaN() : std::min(x, y);
}

// Floating arithmetic in T (float, or double for f64; see kernels.hpp).
template <typename T>
void binaryFloat(OpType type, const TensorValue& a, const TensorValue& b, TensorValue& out) {
  auto run = [&](auto f) {
    broadcastBinary<double>(a.floats, a.shape, b.floats, b.shape, out.floats, out.shape,
                            [&](double x, double y) { return f(static_cast<T>(x), static_cast<T>(y)); });
  };
  switch (type) {
    case OpType::kAdd: run([](T x, T y) { return x + y; }); break;
    case OpType::kSub: run([](T x, T y) { return x - y; }); break;
    case OpType::kMul: run([](T x, T y) { return x * y; }); break;
    case OpType::kMaximum: run([](T x, T y) { return floatMax(x, y); }); break;
    case OpType::kMinimum: run([](T x, T y) { return floatMin(x, y); }); break;
    default: run([](T x, T y) { return x / y; }); break;
  }
}

template <typename T>
bool compareValues(ir::CompareDirection direction, T x, T y) {
  switch (direction) {
    case ir::CompareDirection::kEq: return x == y;
    case ir::CompareDirection::kNe: return x != y;
    case ir::CompareDirection::kLt: return x < y;
    case ir::CompareDirection::kLe: return x <= y;
    case ir::CompareDirection::kGt: return x > y;
    case ir::CompareDirection::kGe: return x >= y;
  }
  return false;
}

// Reduce with max or min; x viewed with the reduced dimensions kept as 1 in `kept`.
template <typename T>
void reduceExtremum(bool max, std::span<const T> x, const ir::Shape& x_shape, std::span<T> out, const ir::Shape& kept) {
  if constexpr (std::is_floating_point_v<T>) {
    const T start = max ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    if (max) {
      reduceInto<T>(x, x_shape, out, kept, start, [](T a, T b) { return floatMax(a, b); });
    } else {
      reduceInto<T>(x, x_shape, out, kept, start, [](T a, T b) { return floatMin(a, b); });
    }
  } else if (max) {
    reduceInto<T>(x, x_shape, out, kept, std::numeric_limits<T>::lowest(), [](T a, T b) { return std::max(a, b); });
  } else {
    reduceInto<T>(x, x_shape, out, kept, std::numeric_limits<T>::max(), [](T a, T b) { return std::min(a, b); });
  }
}

// Integer arithmetic wraps to the dtype's width, as numpy and ONNX runtimes do.
int64_t wrapTo(DType dtype, int64_t value) {
  switch (dtype) {
    case DType::kUInt8: return static_cast<uint8_t>(value);
    case DType::kInt8: return static_cast<int8_t>(value);
    case DType::kInt32: return static_cast<int32_t>(value);
    case DType::kUInt32: return static_cast<uint32_t>(value);
    case DType::kBool: return value != 0;
    default: return value;
  }
}

std::vector<double> asDoubles(const TensorValue& value) {
  if (TensorValue::isFloating(value.dtype)) return {value.floats.begin(), value.floats.end()};
  return {value.ints.begin(), value.ints.end()};
}

// One replica's term of an all-reduce (kSum, kMax or kMin, as Graph::allReduce allows):
// acc = acc (reduction) x, elementwise. Floating sums in float (double for f64), rounded to
// the dtype once, by the caller, as the CUDA backend's host collective does; integer sums
// wrapped to the dtype's width.
void reduceReplica(ir::Reduction reduction, TensorValue& acc, const TensorValue& x) {
  if (TensorValue::isFloating(acc.dtype)) {
    const bool f64 = acc.dtype == DType::kF64;
    for (size_t i = 0; i < acc.floats.size(); ++i) {
      const double a = acc.floats[i], v = x.floats[i];
      double r = f64 ? a + v : static_cast<double>(static_cast<float>(a) + static_cast<float>(v));
      if (reduction == ir::Reduction::kMax) r = floatMax(a, v);
      if (reduction == ir::Reduction::kMin) r = floatMin(a, v);
      acc.floats[i] = r;
    }
    return;
  }
  for (size_t i = 0; i < acc.ints.size(); ++i) {
    const int64_t a = acc.ints[i], v = x.ints[i];
    // In uint64, where a sum wraps by definition, then to the dtype's width.
    int64_t r = static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(v));
    if (reduction == ir::Reduction::kMax) r = std::max(a, v);
    if (reduction == ir::Reduction::kMin) r = std::min(a, v);
    acc.ints[i] = wrapTo(acc.dtype, r);
  }
}

void binaryInt(OpType type, const TensorValue& a, const TensorValue& b, TensorValue& out) {
  auto run = [&](auto f) {
    broadcastBinary<int64_t>(a.ints, a.shape, b.ints, b.shape, out.ints, out.shape,
                             [&](int64_t x, int64_t y) { return wrapTo(out.dtype, f(x, y)); });
  };
  switch (type) {
    case OpType::kAdd: run([](int64_t x, int64_t y) { return x + y; }); break;
    case OpType::kSub: run([](int64_t x, int64_t y) { return x - y; }); break;
    case OpType::kMul: run([](int64_t x, int64_t y) { return x * y; }); break;
    case OpType::kMaximum: run([](int64_t x, int64_t y) { return std::max(x, y); }); break;
    case OpType::kMinimum: run([](int64_t x, int64_t y) { return std::min(x, y); }); break;
    default:
      run([](int64_t x, int64_t y) {
        if (y == 0) throw Error(ErrorKind::kInvalidInput, "integer division by zero");
        return numerics::integerQuotient(x, y);  // truncates toward zero
      });
      break;
  }
}

template <typename T>
T applyUnary(const ir::Op& op, T x) {
  const auto alpha = static_cast<T>(op.alpha);
  switch (op.unary) {
    case ir::UnaryKind::kAbs: return std::abs(x);
    case ir::UnaryKind::kErf: return std::erf(x);
    case ir::UnaryKind::kExp: return std::exp(x);
    case ir::UnaryKind::kLog: return std::log(x);
    case ir::UnaryKind::kNeg: return -x;
    case ir::UnaryKind::kReciprocal: return T{1} / x;
    case ir::UnaryKind::kSigmoid: return T{1} / (T{1} + std::exp(-x));
    case ir::UnaryKind::kSqrt: return std::sqrt(x);
    case ir::UnaryKind::kTanh: return std::tanh(x);
    case ir::UnaryKind::kRound: return std::nearbyint(x);  // the default rounding mode: halves to even
    case ir::UnaryKind::kLeakyRelu: return x >= T{0} ? x : alpha * x;
    case ir::UnaryKind::kElu: return x >= T{0} ? x : alpha * std::expm1(x);
    case ir::UnaryKind::kSelu: return static_cast<T>(op.gamma) * (x > T{0} ? x : alpha * std::expm1(x));
    case ir::UnaryKind::kFloor: return std::floor(x);
    case ir::UnaryKind::kCeil: return std::ceil(x);
    case ir::UnaryKind::kSign: return x > T{0} ? T{1} : (x < T{0} ? T{-1} : T{0});
    case ir::UnaryKind::kSin: return std::sin(x);
    case ir::UnaryKind::kCos: return std::cos(x);
    case ir::UnaryKind::kTan: return std::tan(x);
    case ir::UnaryKind::kAsin: return std::asin(x);
    case ir::UnaryKind::kAcos: return std::acos(x);
    case ir::UnaryKind::kAtan: return std::atan(x);
    case ir::UnaryKind::kSinh: return std::sinh(x);
    case ir::UnaryKind::kCosh: return std::cosh(x);
    case ir::UnaryKind::kAsinh: return std::asinh(x);
    case ir::UnaryKind::kAcosh: return std::acosh(x);
    case ir::UnaryKind::kAtanh: return std::atanh(x);
  }
  return x;
}

// f'(x), given x and y = f(x).
template <typename T>
T unaryDerivative(const ir::Op& op, T x, T y) {
  constexpr auto kTwoOverSqrtPi = static_cast<T>(1.1283791670955126);
  const auto alpha = static_cast<T>(op.alpha);
  const auto gamma = static_cast<T>(op.gamma);
  switch (op.unary) {
    case ir::UnaryKind::kAbs: return x > 0 ? T{1} : (x < 0 ? T{-1} : T{0});
    case ir::UnaryKind::kErf: return kTwoOverSqrtPi * std::exp(-x * x);
    case ir::UnaryKind::kExp: return y;
    case ir::UnaryKind::kLog: return T{1} / x;
    case ir::UnaryKind::kNeg: return T{-1};
    case ir::UnaryKind::kReciprocal: return -y * y;
    case ir::UnaryKind::kSigmoid: return y * (T{1} - y);
    case ir::UnaryKind::kSqrt: return T{0.5} / y;
    case ir::UnaryKind::kTanh: return T{1} - y * y;
    case ir::UnaryKind::kRound: return T{0};
    // The kinks at 0 take the left side's slope, as PyTorch's; Elu's and Selu's from x, not
    // from y + alpha, which loses the small slopes of very negative x to rounding.
    case ir::UnaryKind::kLeakyRelu: return x > T{0} ? T{1} : alpha;
    case ir::UnaryKind::kElu: return x > T{0} ? T{1} : alpha * std::exp(x);
    case ir::UnaryKind::kSelu: return x > T{0} ? gamma : gamma * alpha * std::exp(x);
    case ir::UnaryKind::kFloor:
    case ir::UnaryKind::kCeil:
    case ir::UnaryKind::kSign: return T{0};
    case ir::UnaryKind::kSin: return std::cos(x);
    case ir::UnaryKind::kCos: return -std::sin(x);
    case ir::UnaryKind::kTan: return T{1} + y * y;
    case ir::UnaryKind::kAsin: return T{1} / std::sqrt(T{1} - x * x);
    case ir::UnaryKind::kAcos: return T{-1} / std::sqrt(T{1} - x * x);
    case ir::UnaryKind::kAtan: return T{1} / (T{1} + x * x);
    case ir::UnaryKind::kSinh: return std::cosh(x);
    case ir::UnaryKind::kCosh: return std::sinh(x);
    case ir::UnaryKind::kAsinh: return T{1} / std::sqrt(x * x + T{1});
    case ir::UnaryKind::kAcosh: return T{1} / std::sqrt(x * x - T{1});
    case ir::UnaryKind::kAtanh: return T{1} / (T{1} - x * x);
  }
  return T{0};
}

}  // namespace

void checkCpuThreads(int threads) {
  if (threads < 1 || threads > kMaxCpuThreads) {
    throw Error(ErrorKind::kInvalidConfig,
                "threads must be 1 to " + std::to_string(kMaxCpuThreads) + ", got " + std::to_string(threads));
  }
}

namespace {

std::vector<int> everyTensor(const ir::Graph& graph) {
  std::vector<int> ids;
  for (const ir::Tensor& tensor : graph.tensors()) ids.push_back(tensor.id);
  return ids;
}

}  // namespace

CpuExecutor::CpuExecutor(const ir::Graph& graph, CpuOptions options, const std::optional<std::vector<int>>& keep)
    : m_graph(graph), m_options(options), m_lifetimes(tensorLifetimes(graph, keep ? *keep : everyTensor(graph))) {
  checkCpuThreads(m_options.threads);
}

std::vector<TensorValue> CpuExecutor::run(const std::map<std::string, TensorValue>& feeds) const {
  ReplicaValues values{boundFeeds(m_graph, feeds)};
  runOps(values, nullptr);
  return std::move(values.front());
}

TimedRun CpuExecutor::runTimed(const std::map<std::string, TensorValue>& feeds, const TimingOptions& timing) const {
  checkTimingOptions(timing);
  return std::move(timeReplicas(ReplicaValues{boundFeeds(m_graph, feeds)}, timing).front());
}

std::vector<std::vector<TensorValue>> CpuExecutor::runReplicas(
    const std::vector<std::map<std::string, TensorValue>>& feeds) const {
  ReplicaValues values = bound(feeds);
  runOps(values, nullptr);
  return values;
}

std::vector<TimedRun> CpuExecutor::runTimedReplicas(const std::vector<std::map<std::string, TensorValue>>& feeds,
                                                    const TimingOptions& timing) const {
  checkTimingOptions(timing);
  return timeReplicas(bound(feeds), timing);
}

CpuExecutor::ReplicaValues CpuExecutor::bound(const std::vector<std::map<std::string, TensorValue>>& feeds) const {
  if (feeds.empty()) throw Error(ErrorKind::kInvalidConfig, "the CPU executor needs the feeds of at least one replica");
  ReplicaValues values;
  for (const auto& replica_feeds : feeds) values.push_back(boundFeeds(m_graph, replica_feeds));
  return values;
}

std::vector<TimedRun> CpuExecutor::timeReplicas(const ReplicaValues& bound, const TimingOptions& timing) const {
  const size_t ops = m_graph.ops().size(), replicas = bound.size();
  // samples[r][i]: replica r's times of op i, one per timed run.
  std::vector<std::vector<std::vector<double>>> samples(replicas, std::vector<std::vector<double>>(ops));
  std::vector<TimedRun> timed(replicas);
  std::vector<std::vector<double>> seconds(ops, std::vector<double>(replicas));  // by op, then replica
  for (int run = 0; run < timing.warmup + timing.repeats; ++run) {
    // Only the last run's values are returned: the run before's go before this one's come.
    for (TimedRun& replica : timed) replica.values = {};
    ReplicaValues values = bound;
    runOps(values, &seconds);
    for (size_t r = 0; r < replicas; ++r) timed[r].values = std::move(values[r]);
    if (run < timing.warmup) continue;
    for (size_t i = 0; i < ops; ++i) {
      for (size_t r = 0; r < replicas; ++r) samples[r][i].push_back(seconds[i][r]);
    }
  }
  for (size_t r = 0; r < replicas; ++r) {
    timed[r].op_seconds.reserve(ops);
    for (std::vector<double>& op_samples : samples[r]) timed[r].op_seconds.push_back(medianOf(op_samples));
  }
  return timed;
}

void CpuExecutor::runOps(ReplicaValues& values, std::vector<std::vector<double>>* seconds) const {
  auto release = [&values](const std::vector<int>& ids) {
    for (std::vector<TensorValue>& replica : values) {
      for (int id : ids) replica[static_cast<size_t>(id)] = TensorValue{};
    }
  };
  release(m_lifetimes.unread_feeds);
  for (size_t i = 0; i < m_graph.ops().size(); ++i) {
    runOpOnReplicas(m_graph.ops()[i], values, seconds ? &(*seconds)[i] : nullptr);
    release(m_lifetimes.released_after[i]);  // after the op's clock stopped
  }
}

void CpuExecutor::runOpOnReplicas(const ir::Op& op, ReplicaValues& values, std::vector<double>* seconds) const {
  using Clock = std::chrono::steady_clock;
  try {
    if (op.type == OpType::kAllReduce && op.replicas > 1) {
      const auto start = Clock::now();
      allReduce(op, values);
      const std::chrono::duration<double> took = Clock::now() - start;
      if (seconds) std::fill(seconds->begin(), seconds->end(), took.count());
      return;
    }
    for (size_t r = 0; r < values.size(); ++r) {
      const auto start = Clock::now();
      runOp(op, values[r]);
      const std::chrono::duration<double> took = Clock::now() - start;
      if (seconds) (*seconds)[r] = took.count();
    }
  } catch (const Error& error) {
    throw error.within("op '" + op.name + "'");
  }
}

void CpuExecutor::allReduce(const ir::Op& op, ReplicaValues& values) const {
  if (static_cast<size_t>(op.replicas) != values.size()) {
    throw Error(ErrorKind::kUnsupported, "all-reduce across " + std::to_string(op.replicas) +
                                             " replicas, and the CPU reference runs " + std::to_string(values.size()) +
                                             " (tpusim reference --replicas)");
  }
  if (op.group_stride != 1) {
    throw Error(ErrorKind::kUnsupported,
                "an all-reduce over a strided group (tensor parallel) is not run by the CPU reference");
  }
  const auto input = static_cast<size_t>(op.inputs[0]), output = static_cast<size_t>(op.outputs[0]);
  TensorValue reduced = values[0][input];
  for (size_t r = 1; r < values.size(); ++r) reduceReplica(op.reduction, reduced, values[r][input]);
  numerics::roundInPlace(reduced.dtype, std::span<double>(reduced.floats));
  for (std::vector<TensorValue>& replica : values) replica[output] = reduced;
}

namespace {

// One op's values into `out`, floating arithmetic in T: double for an f64 output, else
// float (see kernels.hpp); runOp() rounds them to the output's dtype.
template <typename T>
void computeOp(const ir::Op& op, const std::vector<TensorValue>& values, TensorValue& out, int threads) {
  auto in = [&](size_t i) -> const TensorValue& { return values[static_cast<size_t>(op.inputs[i])]; };
  std::vector<double>& y = out.floats;
  switch (op.type) {
    case OpType::kMatMul:
      batchedMatmul<T>(in(0).floats, in(0).shape, in(1).floats, in(1).shape, y, out.shape, op.transpose_a,
                       op.transpose_b, threads);
      break;
    case OpType::kAdd:
    case OpType::kSub:
    case OpType::kMul:
    case OpType::kDiv:
    case OpType::kMaximum:
    case OpType::kMinimum:
      if (TensorValue::isFloating(out.dtype)) {
        binaryFloat<T>(op.type, in(0), in(1), out);
      } else {
        binaryInt(op.type, in(0), in(1), out);
      }
      break;
    case OpType::kScale: {
      const auto factor = static_cast<T>(op.scalar);
      const std::vector<double>& x = in(0).floats;
      for (size_t i = 0; i < y.size(); ++i) y[i] = factor * static_cast<T>(x[i]);
      break;
    }
    case OpType::kReshape:
      out.floats = in(0).floats;
      out.ints = in(0).ints;
      break;
    case OpType::kReduceSumTo: reduceSumTo<T>(in(0).floats, in(0).shape, y, out.shape); break;
    case OpType::kRelu: {
      const std::vector<double>& x = in(0).floats;
      for (size_t i = 0; i < y.size(); ++i) y[i] = std::isnan(x[i]) ? x[i] : (x[i] > 0.0 ? x[i] : 0.0);
      break;
    }
    case OpType::kReluGrad: {
      const std::vector<double>& dy = in(0).floats;
      const std::vector<double>& x = in(1).floats;
      for (size_t i = 0; i < y.size(); ++i) y[i] = x[i] > 0.0 ? dy[i] : 0.0;
      break;
    }
    case OpType::kSoftmaxCrossEntropy: {
      const TensorValue& logits = in(0);
      y[0] = softmaxCrossEntropy<T>(logits.floats, in(1).ints, logits.shape[0], logits.shape[1]);
      break;
    }
    case OpType::kSoftmaxCrossEntropyGrad: {
      const TensorValue& logits = in(0);
      softmaxCrossEntropyGrad<T>(logits.floats, in(1).ints, y, logits.shape[0], logits.shape[1]);
      break;
    }
    case OpType::kSoftmax:
    case OpType::kLogSoftmax: {
      const ir::Shape& shape = in(0).shape;
      const auto axis = static_cast<size_t>(op.axis);
      const int64_t outer = ir::elementCount(ir::Shape(shape.begin(), shape.begin() + static_cast<long>(axis)));
      const int64_t inner = ir::elementCount(ir::Shape(shape.begin() + static_cast<long>(axis) + 1, shape.end()));
      softmax<T>(in(0).floats, y, outer, shape[axis], inner, op.type == OpType::kLogSoftmax);
      break;
    }
    case OpType::kNllLoss: {
      const ir::Shape& shape = in(0).shape;
      const int64_t trailing = ir::elementCount(ir::Shape(shape.begin() + 2, shape.end()));
      const std::vector<double> none;
      const std::vector<double>& weights = op.inputs.size() > 2 ? in(2).floats : none;
      const int reduction = op.reduction == ir::Reduction::kNone ? 0 : op.reduction == ir::Reduction::kSum ? 1 : 2;
      nllLoss<T>(in(0).floats, in(1).ints, weights, y, shape[0], shape[1], trailing, reduction,
                 op.ignore_index ? &*op.ignore_index : nullptr);
      break;
    }
    case OpType::kUnary: {
      const std::vector<double>& x = in(0).floats;
      for (size_t i = 0; i < y.size(); ++i) y[i] = applyUnary(op, static_cast<T>(x[i]));
      break;
    }
    case OpType::kUnaryGrad: {
      const std::vector<double>& dy = in(0).floats;
      const std::vector<double>& x = in(1).floats;
      const std::vector<double>& fx = in(2).floats;
      for (size_t i = 0; i < y.size(); ++i) {
        y[i] = static_cast<T>(dy[i]) * unaryDerivative(op, static_cast<T>(x[i]), static_cast<T>(fx[i]));
      }
      break;
    }
    case OpType::kTranspose:
      if (TensorValue::isFloating(out.dtype)) {
        transposeValues(in(0).floats, in(0).shape, op.perm, out.floats);
      } else {
        transposeValues(in(0).ints, in(0).shape, op.perm, out.ints);
      }
      break;
    case OpType::kReduce: {
      const TensorValue& x = in(0);
      ir::Shape kept = x.shape;  // the output with reduced dimensions kept as 1
      for (int64_t axis : op.perm) kept[static_cast<size_t>(axis)] = 1;
      if (op.reduction == ir::Reduction::kMax || op.reduction == ir::Reduction::kMin) {
        const bool max = op.reduction == ir::Reduction::kMax;
        if (TensorValue::isFloating(out.dtype)) {
          reduceExtremum<double>(max, x.floats, x.shape, y, kept);
        } else {
          reduceExtremum<int64_t>(max, x.ints, x.shape, out.ints, kept);
        }
        break;
      }
      reduceSumTo<T>(x.floats, x.shape, y, kept);
      if (op.reduction == ir::Reduction::kMean) {
        const auto count = static_cast<T>(ir::elementCount(x.shape) / std::max<int64_t>(1, ir::elementCount(kept)));
        for (double& v : y) v = static_cast<T>(v) / count;
      }
      break;
    }
    case OpType::kBroadcastTo: {
      const TensorValue& x = in(0);
      if (TensorValue::isFloating(out.dtype)) {
        const std::vector<double> zero(1, 0.0);
        broadcastBinary<double>(x.floats, x.shape, zero, {}, y, out.shape, [](double a, double) { return a; });
      } else {
        const std::vector<int64_t> zero(1, 0);
        broadcastBinary<int64_t>(x.ints, x.shape, zero, {}, out.ints, out.shape, [](int64_t a, int64_t) { return a; });
      }
      break;
    }
    case OpType::kCompare: {
      const TensorValue& a = in(0);
      const TensorValue& b = in(1);
      const ir::CompareDirection direction = op.compare;
      if (TensorValue::isFloating(a.dtype)) {
        broadcastMap<double, int64_t>(
            a.floats, a.shape, b.floats, b.shape, out.ints, out.shape,
            [direction](double x, double v) { return compareValues(direction, x, v) ? 1 : 0; });
      } else {
        broadcastMap<int64_t, int64_t>(
            a.ints, a.shape, b.ints, b.shape, out.ints, out.shape,
            [direction](int64_t x, int64_t v) { return compareValues(direction, x, v) ? 1 : 0; });
      }
      break;
    }
    case OpType::kAllReduce:  // one replica: the reduction of x alone is x (more: CpuExecutor::allReduce)
      out.floats = in(0).floats;
      out.ints = in(0).ints;
      break;
    case OpType::kConcat: {
      const int64_t outer = outerOf(out.shape, op.axis);
      const int64_t inner = innerOf(out.shape, op.axis);
      const int64_t out_len = out.shape[static_cast<size_t>(op.axis)];
      int64_t offset = 0;
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        const TensorValue& part = in(i);
        const int64_t len = part.shape[static_cast<size_t>(op.axis)];
        if (TensorValue::isFloating(out.dtype)) {
          copyAlongAxis(part.floats, outer, len, 0, inner, out.floats, out_len, offset, len);
        } else {
          copyAlongAxis(part.ints, outer, len, 0, inner, out.ints, out_len, offset, len);
        }
        offset += len;
      }
      break;
    }
    case OpType::kSlice: {
      const std::vector<size_t> from = slicedOffsets(in(0).shape, op.starts, op.steps, out.shape);
      for (size_t o = 0; o < from.size(); ++o) {
        if (TensorValue::isFloating(out.dtype)) {
          out.floats[o] = in(0).floats[from[o]];
        } else {
          out.ints[o] = in(0).ints[from[o]];
        }
      }
      break;
    }
    case OpType::kSliceGrad: {
      // The slice's gradient added back where the slice read, in the slice's order.
      const std::vector<size_t> to = slicedOffsets(out.shape, op.starts, op.steps, in(0).shape);
      for (size_t o = 0; o < to.size(); ++o) accumulate(y[to[o]], static_cast<T>(in(0).floats[o]));
      break;
    }
    case OpType::kGather: {
      const TensorValue& data = in(0);
      forEachGathered(data.shape, in(1).ints, op.axis, [&](int64_t from, int64_t to, int64_t inner) {
        if (TensorValue::isFloating(out.dtype)) {
          std::copy_n(data.floats.begin() + from, inner, out.floats.begin() + to);
        } else {
          std::copy_n(data.ints.begin() + from, inner, out.ints.begin() + to);
        }
      });
      break;
    }
    case OpType::kGatherGrad: {
      const std::vector<double>& dy = in(0).floats;
      // Repeated indices add up, in the order the gather visited them.
      forEachGathered(out.shape, in(1).ints, op.axis, [&](int64_t to, int64_t from, int64_t inner) {
        for (int64_t e = 0; e < inner; ++e) {
          accumulate(y[static_cast<size_t>(to + e)], static_cast<T>(dy[static_cast<size_t>(from + e)]));
        }
      });
      break;
    }
    case OpType::kPow: {
      // Integers to an integer power: exactly (numerics::integerPow). Else in double, then to a's
      // dtype (integers truncate, as a cast of the float result would).
      const TensorValue& a = in(0);
      const TensorValue& b = in(1);
      if (!TensorValue::isFloating(a.dtype) && !TensorValue::isFloating(b.dtype)) {
        broadcastBinary<int64_t>(a.ints, a.shape, b.ints, b.shape, out.ints, out.shape,
                                 [&](int64_t x, int64_t e) { return wrapTo(out.dtype, numerics::integerPow(x, e)); });
        break;
      }
      const std::vector<double> av = asDoubles(a);
      const std::vector<double> bv = asDoubles(b);
      std::vector<double> result(static_cast<size_t>(ir::elementCount(out.shape)));
      broadcastBinary<double>(av, a.shape, bv, b.shape, result, out.shape,
                              [](double x, double e) { return std::pow(x, e); });
      for (size_t i = 0; i < result.size(); ++i) {
        if (TensorValue::isFloating(out.dtype)) {
          y[i] = result[i];
        } else {
          out.ints[i] = wrapTo(out.dtype, numerics::truncatedInt(result[i]));
        }
      }
      break;
    }
    case OpType::kPowGrad: {
      // d(a^b)/da = b a^(b-1); d(a^b)/db = a^b ln a; both at the broadcast shape.
      const TensorValue& a = in(1);
      const TensorValue& b = in(2);
      const std::vector<double> av = asDoubles(a);
      const std::vector<double> bv = asDoubles(b);
      std::vector<double> local(y.size());
      if (op.axis == 0) {
        broadcastBinary<double>(av, a.shape, bv, b.shape, local, out.shape,
                                [](double x, double e) { return e * std::pow(x, e - 1.0); });
      } else {
        broadcastBinary<double>(av, a.shape, bv, b.shape, local, out.shape,
                                [](double x, double e) { return std::pow(x, e) * std::log(x); });
      }
      for (size_t i = 0; i < y.size(); ++i) y[i] = in(0).floats[i] * local[i];
      break;
    }
    case OpType::kWhere:
      if (TensorValue::isFloating(out.dtype)) {
        broadcastSelect<double>(in(0).ints, in(0).shape, in(1).floats, in(1).shape, in(2).floats, in(2).shape, y,
                                out.shape);
      } else {
        broadcastSelect<int64_t>(in(0).ints, in(0).shape, in(1).ints, in(1).shape, in(2).ints, in(2).shape, out.ints,
                                 out.shape);
      }
      break;
    case OpType::kPool:
      if (TensorValue::isFloating(out.dtype)) {
        poolForward<double, T>(in(0).floats, in(0).shape, y, out.shape, op.pool);
      } else {
        poolForward<int64_t, float>(in(0).ints, in(0).shape, out.ints, out.shape, op.pool);
      }
      break;
    case OpType::kPoolArgmax: poolArgmax(in(0).floats, in(0).shape, out.ints, out.shape, op.pool); break;
    case OpType::kPoolGrad: poolGrad<T>(in(0).floats, in(0).shape, in(1).floats, in(1).shape, y, op.pool); break;
    case OpType::kConv:
      convForward<T>(in(0).floats, in(1).floats, y, ConvShapes{in(0).shape, in(1).shape, out.shape}, op.conv, threads);
      break;
    case OpType::kConvGradInput:
      convGradInput<T>(in(0).floats, in(1).floats, y, ConvShapes{out.shape, in(1).shape, in(0).shape}, op.conv,
                       threads);
      break;
    case OpType::kConvGradWeight:
      convGradWeight<T>(in(0).floats, in(1).floats, y, ConvShapes{in(0).shape, out.shape, in(1).shape}, op.conv,
                        threads);
      break;
    case OpType::kCast: {
      // To a float type: the value, rounded below to the dtype. To an integer type: truncated
      // toward zero (NaN to 0, clamped to int64), then wrapped to the width; to bool: non-zero.
      const TensorValue& x = in(0);
      const bool from_float = TensorValue::isFloating(x.dtype);
      if (TensorValue::isFloating(out.dtype)) {
        // (An integer converts straight to T; a float value is rounded once, by runOp().)
        for (size_t i = 0; i < y.size(); ++i) y[i] = from_float ? x.floats[i] : static_cast<T>(x.ints[i]);
      } else {
        for (size_t i = 0; i < out.ints.size(); ++i) {
          int64_t v = 0;
          if (!from_float) {
            v = x.ints[i];
          } else if (out.dtype == DType::kBool) {
            v = x.floats[i] != 0.0;
          } else {
            v = numerics::truncatedInt(x.floats[i]);
          }
          out.ints[i] = wrapTo(out.dtype, v);
        }
      }
      break;
    }
    case OpType::kSgdUpdate: {
      const std::vector<double>& w = in(0).floats;
      const std::vector<double>& g = in(1).floats;
      const auto rate = static_cast<T>(op.scalar);
      for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<T>(w[i]) - rate * static_cast<T>(g[i]);
      break;
    }
    // Training: losses and optimizers (training_kernels.hpp).
    case OpType::kMseLoss: y[0] = mseLoss(in(0).floats, in(1).floats); break;
    case OpType::kMseLossGrad: mseLossGrad(in(0).floats, in(1).floats, y); break;
    case OpType::kNllLossGrad: {
      const ir::Shape& shape = in(0).shape;
      const int64_t trailing = ir::elementCount(ir::Shape(shape.begin() + 2, shape.end()));
      const std::vector<double> none;
      nllLossGrad<T>(in(1).ints, op.inputs.size() > 2 ? in(2).floats : none, y, shape[0], shape[1], trailing,
                     op.reduction == ir::Reduction::kSum ? 1 : 2, op.ignore_index ? &*op.ignore_index : nullptr);
      break;
    }
    case OpType::kOptimizerUpdate: {
      if (op.update_target == ir::UpdateTarget::kStep) {
        out.ints[0] = in(0).ints[0] + 1;
        break;
      }
      // Unpacked in the order graph.hpp gives (optimizerUpdate).
      const bool state_update = op.update_target != ir::UpdateTarget::kParameter;
      UpdateOperands operands;
      size_t next = 0;
      if (!state_update) operands.parameter = in(next++).floats;
      operands.gradient = in(next++).floats;
      operands.step = in(next++).ints.at(0);
      if (op.has_rate_input) operands.rate_input = in(next++).floats.at(0);
      if (state_update) {
        operands.states.push_back(in(next++).floats);
        if (ir::updateReadsParameter(op)) operands.parameter = in(next++).floats;
      } else {
        while (next < op.inputs.size()) operands.states.push_back(in(next++).floats);
      }
      while (next < op.inputs.size()) operands.scalars.push_back(in(next++).floats.at(0));
      optimizerUpdate(op.optimizer, op.update_target, operands, y);
      break;
    }
  }
}

}  // namespace

void CpuExecutor::runOp(const ir::Op& op, std::vector<TensorValue>& values) const {
  const ir::Tensor& out_tensor = m_graph.tensor(op.outputs[0]);
  TensorValue out = TensorValue::zeros(out_tensor.shape, out_tensor.dtype);
  const DType input_dtype = values[static_cast<size_t>(op.inputs[0])].dtype;
  const bool int8 = isInt8Product(op, input_dtype);
  if ((m_options.mxu && runsOnMxu(op, input_dtype)) || int8) {
    std::vector<const TensorValue*> inputs;
    for (int input : op.inputs) inputs.push_back(&values[static_cast<size_t>(input)]);
    mxuCompute(op, inputs, out, m_options.mxu.value_or(MxuNumericsOptions{}), m_options.threads);
  } else if (out.dtype == DType::kF64) {
    computeOp<double>(op, values, out, m_options.threads);
  } else {
    computeOp<float>(op, values, out, m_options.threads);
  }
  numerics::roundInPlace(out.dtype, std::span<double>(out.floats));
  values[static_cast<size_t>(op.outputs[0])] = std::move(out);
}

}  // namespace tpusim::reference
