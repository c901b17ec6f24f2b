#include "reference/cuda/cuda_executor.hpp"

#include <vector>

#include "reference/cuda/op_launch.hpp"
#include "reference/cuda/op_support.hpp"
#include "sim/common/error.hpp"

namespace tpusim::reference {

namespace {

using ir::OpType;
using cuda::Elem;
using cuda::Ref;

Error invalid(const ir::Op& op, const std::string& what) {
  return Error(ErrorKind::kInvalidInput, what).within("op '" + op.name + "'");
}

// Labels and gather indices index a row: out of range is an input error, checked on the
// host before any kernel reads them (the kernels cannot report it). They are fed (op_support).
void checkIndices(const ir::Graph& graph, const std::vector<ir::TensorValue>& fed) {
  for (const ir::Op& op : graph.ops()) {
    const auto values = [&](size_t i) -> const std::vector<int64_t>& {
      return fed[static_cast<size_t>(op.inputs[i])].ints;
    };
    switch (op.type) {
      case OpType::kSoftmaxCrossEntropy:
      case OpType::kSoftmaxCrossEntropyGrad: {
        const int64_t classes = graph.tensor(op.inputs[0]).shape[1];
        const std::vector<int64_t>& labels = values(1);
        for (size_t r = 0; r < labels.size(); ++r) {
          if (labels[r] < 0 || labels[r] >= classes) {
            throw invalid(op, "label " + std::to_string(labels[r]) + " of row " + std::to_string(r) +
                                  " is not a class id in [0, " + std::to_string(classes) + ")");
          }
        }
        break;
      }
      case OpType::kNllLoss:
      case OpType::kNllLossGrad: {
        const int64_t classes = graph.tensor(op.inputs[0]).shape[1];
        const std::vector<int64_t>& labels = values(1);
        for (size_t p = 0; p < labels.size(); ++p) {
          if (op.ignore_index && labels[p] == *op.ignore_index) continue;
          if (labels[p] < 0 || labels[p] >= classes) {
            throw invalid(op, "label " + std::to_string(labels[p]) + " at position " + std::to_string(p) +
                                  " is not a class id in [0, " + std::to_string(classes) + ")");
          }
        }
        break;
      }
      case OpType::kGather:
      case OpType::kGatherGrad: {
        const ir::Shape& data = graph.tensor(op.type == OpType::kGather ? op.inputs[0] : op.outputs[0]).shape;
        const int64_t length = data[static_cast<size_t>(op.axis)];
        for (int64_t index : values(1)) {
          if (index < -length || index >= length) {
            throw invalid(op, "index " + std::to_string(index) + " is out of range for a dimension of " +
                                  std::to_string(length));
          }
        }
        break;
      }
      default: break;
    }
  }
}

size_t bytesOf(const ir::Tensor& tensor) {
  return static_cast<size_t>(ir::elementCount(tensor.shape)) * cuda::elementBytes(cuda::elemOf(tensor.dtype));
}

// A fed value in the device's layout (element.hpp), rounded to its dtype as the CPU executor rounds feeds.
std::vector<unsigned char> deviceBytes(const ir::Tensor& tensor, const ir::TensorValue& value) {
  std::vector<unsigned char> bytes(bytesOf(tensor));
  const Ref host{bytes.data(), cuda::elemOf(tensor.dtype)};
  for (size_t i = 0; i < value.size(); ++i) {
    if (cuda::isFloating(host.elem)) {
      cuda::storeDouble(host, static_cast<int64_t>(i), value.floats[i]);
    } else {
      cuda::storeInt(host, static_cast<int64_t>(i), value.ints[i]);
    }
  }
  return bytes;
}

ir::TensorValue hostValue(const ir::Tensor& tensor, const std::vector<unsigned char>& bytes) {
  ir::TensorValue value = ir::TensorValue::zeros(tensor.shape, tensor.dtype);
  const Ref host{const_cast<unsigned char*>(bytes.data()), cuda::elemOf(tensor.dtype)};
  for (size_t i = 0; i < value.size(); ++i) {
    if (cuda::isFloating(host.elem)) {
      value.floats[i] = cuda::loadFloat(host, static_cast<int64_t>(i));
    } else {
      value.ints[i] = cuda::loadInt(host, static_cast<int64_t>(i));
    }
  }
  return value;
}

}  // namespace

CudaExecutor::CudaExecutor(const ir::Graph& graph) : m_graph(graph) {
  for (const ir::Op& op : graph.ops()) {
    const std::string why = cuda::unsupportedReason(graph, op);
    if (!why.empty()) {
      throw Error(ErrorKind::kUnsupported, "the CUDA executor cannot run op '" + op.name + "' (" +
                                               ir::opTypeName(op.type) + "): " + why + "; use --backend cpu");
    }
  }
  for (const ir::Tensor& tensor : graph.tensors()) {
    if (tensor.dtype == DType::kF64) {
      throw Error(ErrorKind::kUnsupported,
                  "the CUDA executor holds no f64 tensors, and '" + tensor.name + "' is f64; use --backend cpu");
    }
  }
}

TimedRun CudaExecutor::runTimed(const std::map<std::string, ir::TensorValue>& feeds,
                                const TimingOptions& timing) const {
  checkTimingOptions(timing);
  const std::vector<ir::TensorValue> fed = bound(feeds);  // bad feeds are refused before a device is sought
  std::unique_ptr<cuda::Device> device = cuda::makeCudaDevice();
  return runBound(*device, fed, timing);
}

TimedRun CudaExecutor::runTimedOn(cuda::Device& device, const std::map<std::string, ir::TensorValue>& feeds,
                                  const TimingOptions& timing) const {
  checkTimingOptions(timing);
  return runBound(device, bound(feeds), timing);
}

std::vector<ir::TensorValue> CudaExecutor::bound(const std::map<std::string, ir::TensorValue>& feeds) const {
  std::vector<ir::TensorValue> fed(m_graph.tensors().size());
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
    fed[static_cast<size_t>(tensor.id)] = feed->second;
  }
  checkIndices(m_graph, fed);
  return fed;
}

TimedRun CudaExecutor::runBound(cuda::Device& device, const std::vector<ir::TensorValue>& fed,
                                const TimingOptions& timing) const {
  const size_t tensors = m_graph.tensors().size();
  // Every tensor's buffer for the whole step; a Reshape's output aliases its input (in graph order).
  std::vector<Ref> refs(tensors);
  for (const ir::Tensor& tensor : m_graph.tensors()) {
    const ir::Op* producer = m_graph.producer(tensor.id);
    if (producer != nullptr && producer->type == OpType::kReshape) continue;
    Ref& ref = refs[static_cast<size_t>(tensor.id)];
    ref = {device.allocate(bytesOf(tensor)), cuda::elemOf(tensor.dtype)};
    if (producer == nullptr) {
      const std::vector<unsigned char> bytes = deviceBytes(tensor, fed[static_cast<size_t>(tensor.id)]);
      device.upload(ref.data, bytes.data(), bytes.size());
    }
  }
  for (const ir::Op& op : m_graph.ops()) {
    if (op.type == OpType::kReshape) refs[static_cast<size_t>(op.outputs[0])] = refs[static_cast<size_t>(op.inputs[0])];
  }

  const size_t ops = m_graph.ops().size();
  std::vector<cuda::OpLaunch> launches;
  launches.reserve(ops);
  for (const ir::Op& op : m_graph.ops()) {
    try {
      launches.push_back(cuda::planOp(device, m_graph, op, refs));
    } catch (const Error& error) {
      throw error.within("op '" + op.name + "'");
    }
  }

  std::vector<std::vector<double>> samples(ops);
  for (int run = 0; run < timing.warmup + timing.repeats; ++run) {
    for (size_t i = 0; i < ops; ++i) {
      try {
        device.startTimer();
        launches[i](device);
        const double seconds = device.stopTimer();
        if (run >= timing.warmup) samples[i].push_back(seconds);
      } catch (const Error& error) {
        throw error.within("op '" + m_graph.ops()[i].name + "'");
      }
    }
  }

  TimedRun timed;
  timed.values.resize(tensors);
  for (const ir::Tensor& tensor : m_graph.tensors()) {
    std::vector<unsigned char> bytes(bytesOf(tensor));
    device.download(bytes.data(), refs[static_cast<size_t>(tensor.id)].data, bytes.size());
    timed.values[static_cast<size_t>(tensor.id)] = hostValue(tensor, bytes);
  }
  timed.op_seconds.reserve(ops);
  for (std::vector<double>& op_samples : samples) timed.op_seconds.push_back(medianOf(op_samples));
  timed.device_peak_bytes = device.peakBytes();
  return timed;
}

}  // namespace tpusim::reference
