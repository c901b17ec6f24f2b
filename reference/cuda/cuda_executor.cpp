#include "reference/cuda/cuda_executor.hpp"

#include <vector>

#include "reference/cuda/cuda_kernels.hpp"
#include "sim/common/error.hpp"

namespace tpusim::reference {

namespace {

using ir::OpType;

bool f32(const ir::Graph& graph, int tensor) {
  return graph.tensor(tensor).dtype == DType::kF32;
}

bool allF32(const ir::Graph& graph, const ir::Op& op) {
  for (int id : op.inputs) {
    if (!f32(graph, id)) return false;
  }
  return f32(graph, op.outputs[0]);
}

// The batch dimensions of a MatMul operand: all but the last two.
ir::Shape batchDims(const ir::Shape& shape) {
  return ir::Shape(shape.begin(), shape.end() - 2);
}

// Why the executor cannot run `op`, or "" when it can.
std::string unsupportedReason(const ir::Graph& graph, const ir::Op& op) {
  if (op.outputs.size() != 1) return "it has " + std::to_string(op.outputs.size()) + " outputs";
  const ir::Shape& out = graph.tensor(op.outputs[0]).shape;
  if (out.size() > static_cast<size_t>(cuda::kMaxRank)) return "its output has more than 8 dimensions";
  switch (op.type) {
    case OpType::kMatMul: {
      if (!allF32(graph, op)) return "the CUDA MatMul is f32 only";
      const ir::Shape& a = graph.tensor(op.inputs[0]).shape;
      const ir::Shape& b = graph.tensor(op.inputs[1]).shape;
      if (a.size() < 2 || b.size() < 2) return "the CUDA MatMul needs matrices (rank 2 or more)";
      const ir::Shape batch = batchDims(out);
      for (const ir::Shape* operand : {&a, &b}) {
        if (operand->size() > 2 && batchDims(*operand) != batch) {
          return "the CUDA MatMul broadcasts a rank-2 operand over the batch, not a partial batch shape";
        }
      }
      return "";
    }
    case OpType::kAdd:
    case OpType::kSub:
    case OpType::kMul:
    case OpType::kDiv:
    case OpType::kMaximum:
    case OpType::kMinimum:
    case OpType::kScale:
    case OpType::kRelu:
    case OpType::kReluGrad:
    case OpType::kReduceSumTo:
    case OpType::kSgdUpdate:
      if (!allF32(graph, op)) return "the CUDA kernels of " + std::string(ir::opTypeName(op.type)) + " are f32 only";
      for (int id : op.inputs) {
        if (graph.tensor(id).shape.size() > static_cast<size_t>(cuda::kMaxRank)) return "an input has over 8 dims";
      }
      return "";
    case OpType::kReshape: {
      const DType dtype = graph.tensor(op.inputs[0]).dtype;
      return dtype == DType::kF32 || dtype == DType::kInt64 ? "" : "the CUDA executor holds f32 and int64 tensors only";
    }
    case OpType::kSoftmaxCrossEntropy:
    case OpType::kSoftmaxCrossEntropyGrad: {
      const ir::Tensor& labels = graph.tensor(op.inputs[1]);
      if (!f32(graph, op.inputs[0]) || labels.dtype != DType::kInt64) return "it needs f32 logits and int64 labels";
      if (graph.tensor(op.inputs[0]).shape.size() != 2) return "it needs [rows, classes] logits";
      if (graph.producer(labels.id) != nullptr)
        return "its labels are computed, not fed (their range is checked on entry)";
      return "";
    }
    default: return "the CUDA executor has no kernel for it yet";
  }
}

cuda::BroadcastIndex broadcastIndex(const ir::Shape& out, const ir::Shape& a, const ir::Shape& b) {
  cuda::BroadcastIndex index;
  index.rank = static_cast<int>(out.size());
  for (const auto& [shape, strides] : {std::pair{&a, index.a_strides}, std::pair{&b, index.b_strides}}) {
    int64_t stride = 1;
    const size_t offset = out.size() - shape->size();  // right-aligned, as numpy broadcasts
    for (size_t d = out.size(); d-- > 0;) {
      const int64_t dim = d >= offset ? (*shape)[d - offset] : 1;
      strides[d] = dim == 1 ? 0 : stride;
      stride *= dim;
    }
  }
  for (size_t d = 0; d < out.size(); ++d) index.dims[d] = out[d];
  return index;
}

cuda::ReduceIndex reduceIndex(const ir::Shape& x, const ir::Shape& out) {
  cuda::ReduceIndex index;
  index.rank = static_cast<int>(x.size());
  const size_t offset = x.size() - out.size();
  for (size_t d = 0; d < x.size(); ++d) {
    index.x_dims[d] = x[d];
    index.out_dims[d] = d >= offset ? out[d - offset] : 1;
  }
  return index;
}

cuda::Binary binaryOf(OpType type) {
  switch (type) {
    case OpType::kSub: return cuda::Binary::kSub;
    case OpType::kMul: return cuda::Binary::kMul;
    case OpType::kDiv: return cuda::Binary::kDiv;
    case OpType::kMaximum: return cuda::Binary::kMaximum;
    case OpType::kMinimum: return cuda::Binary::kMinimum;
    default: return cuda::Binary::kAdd;
  }
}

// Every tensor's device buffer, by tensor id: f32 tensors in `floats`, int64 in `ints`.
struct Buffers {
  std::vector<float*> floats;
  std::vector<int64_t*> ints;
};

void launch(cuda::Device& device, const ir::Graph& graph, const ir::Op& op, const Buffers& buffers) {
  const auto in = [&](size_t i) { return buffers.floats[static_cast<size_t>(op.inputs[i])]; };
  const auto shapeOf = [&](int id) -> const ir::Shape& { return graph.tensor(id).shape; };
  float* out = buffers.floats[static_cast<size_t>(op.outputs[0])];
  const ir::Shape& out_shape = shapeOf(op.outputs[0]);
  const int64_t count = ir::elementCount(out_shape);
  switch (op.type) {
    case OpType::kMatMul: {
      const ir::Shape& a = shapeOf(op.inputs[0]);
      const ir::Shape& b = shapeOf(op.inputs[1]);
      const int64_t m = out_shape[out_shape.size() - 2], n = out_shape.back();
      const int64_t k = op.transpose_a ? a[a.size() - 2] : a.back();
      const int64_t batch = ir::elementCount(batchDims(out_shape));
      device.gemm(op.transpose_a, op.transpose_b, m, n, k, in(0), a.size() > 2 ? m * k : 0, in(1),
                  b.size() > 2 ? k * n : 0, out, batch);
      break;
    }
    case OpType::kAdd:
    case OpType::kSub:
    case OpType::kMul:
    case OpType::kDiv:
    case OpType::kMaximum:
    case OpType::kMinimum:
      device.binary(binaryOf(op.type), broadcastIndex(out_shape, shapeOf(op.inputs[0]), shapeOf(op.inputs[1])), in(0),
                    in(1), out, count);
      break;
    case OpType::kScale: device.scale(static_cast<float>(op.scalar), in(0), out, count); break;
    case OpType::kRelu: device.relu(in(0), out, count); break;
    case OpType::kReluGrad: device.reluGrad(in(0), in(1), out, count); break;
    case OpType::kReduceSumTo:
      device.reduceSumTo(reduceIndex(shapeOf(op.inputs[0]), out_shape), in(0), out, count);
      break;
    case OpType::kSgdUpdate: device.sgdUpdate(static_cast<float>(op.scalar), in(0), in(1), out, count); break;
    case OpType::kSoftmaxCrossEntropy:
    case OpType::kSoftmaxCrossEntropyGrad: {
      const ir::Shape& logits = shapeOf(op.inputs[0]);
      const int64_t* labels = buffers.ints[static_cast<size_t>(op.inputs[1])];
      if (op.type == OpType::kSoftmaxCrossEntropy) {
        device.softmaxCrossEntropy(in(0), labels, out, logits[0], logits[1]);
      } else {
        device.softmaxCrossEntropyGrad(in(0), labels, out, logits[0], logits[1]);
      }
      break;
    }
    default: break;  // kReshape: its output aliases its input; the constructor refused the rest
  }
}

// Labels index a row of classes: out of range is an input error, checked before any kernel reads them.
void checkLabels(const ir::Graph& graph, const std::vector<ir::TensorValue>& fed) {
  for (const ir::Op& op : graph.ops()) {
    if (op.type != OpType::kSoftmaxCrossEntropy && op.type != OpType::kSoftmaxCrossEntropyGrad) continue;
    const int64_t classes = graph.tensor(op.inputs[0]).shape[1];
    for (int64_t label : fed[static_cast<size_t>(op.inputs[1])].ints) {
      if (label < 0 || label >= classes) {
        throw Error(ErrorKind::kInvalidInput, "op '" + op.name + "': label " + std::to_string(label) +
                                                  " is outside [0, " + std::to_string(classes) + ")");
      }
    }
  }
}

}  // namespace

CudaExecutor::CudaExecutor(const ir::Graph& graph) : m_graph(graph) {
  for (const ir::Op& op : graph.ops()) {
    const std::string why = unsupportedReason(graph, op);
    if (!why.empty()) {
      throw Error(ErrorKind::kUnsupported, "the CUDA executor cannot run op '" + op.name + "' (" +
                                               ir::opTypeName(op.type) + "): " + why + "; use --backend cpu");
    }
  }
}

TimedRun CudaExecutor::runTimed(const std::map<std::string, ir::TensorValue>& feeds,
                                const TimingOptions& timing) const {
  checkTimingOptions(timing);
  const size_t tensors = m_graph.tensors().size();
  std::vector<ir::TensorValue> fed(tensors);
  for (const ir::Tensor& tensor : m_graph.tensors()) {
    if (m_graph.producer(tensor.id) != nullptr) continue;
    const auto feed = feeds.find(tensor.name);
    if (feed == feeds.end()) {
      throw Error(ErrorKind::kInvalidInput,
                  "no value given for " + std::string(ir::tensorRoleName(tensor.role)) + " '" + tensor.name + "'");
    }
    if (feed->second.shape != tensor.shape || feed->second.dtype != tensor.dtype ||
        feed->second.size() != static_cast<size_t>(ir::elementCount(tensor.shape))) {
      throw Error(ErrorKind::kInvalidInput, "value for '" + tensor.name + "' is " + dtypeName(feed->second.dtype) +
                                                ir::shapeToString(feed->second.shape) + ", the graph needs " +
                                                dtypeName(tensor.dtype) + ir::shapeToString(tensor.shape));
    }
    if (tensor.dtype != DType::kF32 && tensor.dtype != DType::kInt64) {
      throw Error(ErrorKind::kUnsupported, "the CUDA executor holds f32 and int64 tensors only, and '" + tensor.name +
                                               "' is " + dtypeName(tensor.dtype));
    }
    fed[static_cast<size_t>(tensor.id)] = feed->second;
  }
  checkLabels(m_graph, fed);

  cuda::Device device;
  Buffers buffers{std::vector<float*>(tensors, nullptr), std::vector<int64_t*>(tensors, nullptr)};
  for (const ir::Tensor& tensor : m_graph.tensors()) {
    const auto id = static_cast<size_t>(tensor.id);
    const auto count = static_cast<size_t>(ir::elementCount(tensor.shape));
    const ir::Op* producer = m_graph.producer(tensor.id);
    if (producer != nullptr && producer->type == OpType::kReshape) continue;  // aliased below, in graph order
    if (tensor.dtype == DType::kInt64) {
      buffers.ints[id] = device.ints(count);
      if (producer == nullptr) device.upload(buffers.ints[id], fed[id].ints.data(), count);
    } else if (tensor.dtype == DType::kF32) {
      buffers.floats[id] = device.floats(count);
      if (producer == nullptr) {
        const std::vector<float> values(fed[id].floats.begin(), fed[id].floats.end());  // exact: f32 values
        device.upload(buffers.floats[id], values.data(), count);
      }
    }
  }
  for (const ir::Op& op : m_graph.ops()) {
    if (op.type != OpType::kReshape) continue;
    const auto from = static_cast<size_t>(op.inputs[0]), to = static_cast<size_t>(op.outputs[0]);
    buffers.floats[to] = buffers.floats[from];
    buffers.ints[to] = buffers.ints[from];
  }

  const size_t ops = m_graph.ops().size();
  std::vector<std::vector<double>> samples(ops);
  for (int run = 0; run < timing.warmup + timing.repeats; ++run) {
    for (size_t i = 0; i < ops; ++i) {
      const ir::Op& op = m_graph.ops()[i];
      try {
        device.startTimer();
        launch(device, m_graph, op, buffers);
        const double seconds = device.stopTimer();
        if (run >= timing.warmup) samples[i].push_back(seconds);
      } catch (const Error& error) {
        throw error.within("op '" + op.name + "'");
      }
    }
  }
  TimedRun timed;
  timed.values.resize(tensors);
  for (const ir::Tensor& tensor : m_graph.tensors()) {
    const auto id = static_cast<size_t>(tensor.id);
    ir::TensorValue& value = timed.values[id];
    value = ir::TensorValue::zeros(tensor.shape, tensor.dtype);
    const size_t count = value.size();
    if (buffers.ints[id] != nullptr) {
      device.download(value.ints.data(), buffers.ints[id], count);
    } else if (buffers.floats[id] != nullptr) {
      std::vector<float> values(count);
      device.download(values.data(), buffers.floats[id], count);
      value.floats.assign(values.begin(), values.end());
    }
  }
  timed.op_seconds.reserve(ops);
  for (std::vector<double>& op_samples : samples) timed.op_seconds.push_back(medianOf(op_samples));
  return timed;
}

}  // namespace tpusim::reference
