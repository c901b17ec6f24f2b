#include "reference/cuda/cuda_executor.hpp"

#include <vector>

#include "reference/cuda/op_launch.hpp"
#include "reference/cuda/op_support.hpp"
#include "reference/feeds.hpp"
#include "reference/tensor_lifetimes.hpp"
#include "sim/common/error.hpp"

namespace tpusim::reference {

namespace {

using cuda::Elem;
using cuda::Ref;
using ir::OpType;

Error invalid(const ir::Op& op, const std::string& what) {
  return Error(ErrorKind::kInvalidInput, what).within("op '" + op.name + "'");
}

// The messages for a gather index and a loss's label out of range, as the CPU executor words them.
std::string indexOutOfRange(int64_t index, int64_t length) {
  return "index " + std::to_string(index) + " is out of range for a dimension of " + std::to_string(length);
}
std::string notAClass(int64_t label, const std::string& where, int64_t classes) {
  return "label " + std::to_string(label) + " " + where + " is not a class id in [0, " + std::to_string(classes) + ")";
}

// Labels and gather indices index a row: out of range is an input error. Fed ones are checked
// here, on the host, before any kernel reads them; computed ones by the op's kernels
// (checkKernelFaults).
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
            throw invalid(op, notAClass(labels[r], "of row " + std::to_string(r), classes));
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
            throw invalid(op, notAClass(labels[p], "at position " + std::to_string(p), classes));
          }
        }
        break;
      }
      case OpType::kGather:
      case OpType::kGatherGrad: {
        const ir::Shape& data = graph.tensor(op.type == OpType::kGather ? op.inputs[0] : op.outputs[0]).shape;
        const int64_t length = data[static_cast<size_t>(op.axis)];
        for (int64_t index : values(1)) {
          if (index < -length || index >= length) throw invalid(op, indexOutOfRange(index, length));
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

// A fed value (already rounded to its dtype, reference/feeds.hpp) in the device's layout (element.hpp).
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

CudaExecutor::CudaExecutor(const ir::Graph& graph, int64_t replicas, const std::optional<std::vector<int>>& keep)
    : m_graph(graph),
      m_replicas(replicas),
      m_copied_back(keep ? keptTensors(graph, *keep) : std::vector<bool>(graph.tensors().size(), true)) {
  if (replicas < 1) throw Error(ErrorKind::kInvalidConfig, "the CUDA executor needs at least one replica");
  for (const ir::Op& op : graph.ops()) {
    const std::string why = cuda::unsupportedReason(graph, op, replicas);
    if (!why.empty()) {
      // (The CPU executor runs every op but a cross-replica AllReduce.)
      const char* instead = op.type == OpType::kAllReduce ? "" : "; use --backend cpu";
      throw Error(ErrorKind::kUnsupported, "the CUDA executor cannot run op '" + op.name + "' (" +
                                               ir::opTypeName(op.type) + "): " + why + instead);
    }
  }
  for (const ir::Tensor& tensor : graph.tensors()) {
    if (tensor.dtype == DType::kF64) {
      throw Error(ErrorKind::kUnsupported,
                  "the CUDA executor holds no f64 tensors, and '" + tensor.name + "' is f64; use --backend cpu");
    }
  }
}

namespace {

[[noreturn]] void replicaCountMismatch(int64_t replicas, size_t given) {
  throw Error(ErrorKind::kInternal, "the CUDA executor was made for " + std::to_string(replicas) + " replica(s), and " +
                                        std::to_string(given) + " were given");
}

}  // namespace

TimedRun CudaExecutor::runTimed(const std::map<std::string, ir::TensorValue>& feeds,
                                const TimingOptions& timing) const {
  return runReplicas({feeds}, timing).front();
}

TimedRun CudaExecutor::runTimedOn(cuda::Device& device, const std::map<std::string, ir::TensorValue>& feeds,
                                  const TimingOptions& timing) const {
  checkTimingOptions(timing);
  if (m_replicas != 1) replicaCountMismatch(m_replicas, 1);
  return runBound({&device}, nullptr, {bound(feeds)}, timing).front();
}

namespace {

std::vector<cuda::Device*> devicesOf(const cuda::DeviceGroup& group) {
  std::vector<cuda::Device*> devices;
  for (const auto& device : group.devices) devices.push_back(device.get());
  return devices;
}

}  // namespace

std::vector<TimedRun> CudaExecutor::runReplicas(const std::vector<std::map<std::string, ir::TensorValue>>& feeds,
                                                const TimingOptions& timing) const {
  checkTimingOptions(timing);
  if (static_cast<int64_t>(feeds.size()) != m_replicas) replicaCountMismatch(m_replicas, feeds.size());
  std::vector<std::vector<ir::TensorValue>> fed;
  for (const auto& replica : feeds) fed.push_back(bound(replica));  // bad feeds are refused before a device is sought
  cuda::DeviceGroup group = cuda::makeCudaDevices(static_cast<int>(m_replicas));
  return runBound(devicesOf(group), group.collective.get(), fed, timing);
}

std::vector<TimedRun> CudaExecutor::runReplicasOn(cuda::DeviceGroup& group,
                                                  const std::vector<std::map<std::string, ir::TensorValue>>& feeds,
                                                  const TimingOptions& timing) const {
  checkTimingOptions(timing);
  if (static_cast<int64_t>(feeds.size()) != m_replicas || group.devices.size() != feeds.size()) {
    replicaCountMismatch(m_replicas, feeds.size());
  }
  std::vector<std::vector<ir::TensorValue>> fed;
  for (const auto& replica : feeds) fed.push_back(bound(replica));
  return runBound(devicesOf(group), group.collective.get(), fed, timing);
}

std::vector<ir::TensorValue> CudaExecutor::bound(const std::map<std::string, ir::TensorValue>& feeds) const {
  std::vector<ir::TensorValue> fed = boundFeeds(m_graph, feeds);
  checkIndices(m_graph, fed);
  return fed;
}

namespace {

// One replica's buffers and launches, prepared before the timed runs.
struct Replica {
  std::vector<Ref> refs;                  // by tensor id
  std::vector<cuda::OpLaunch> launches;   // by op; empty for a cross-replica AllReduce
  std::vector<cuda::KernelFault> faults;  // by op
  std::vector<std::string> kernels;       // by op: what runs it
};

// After a run: the first op whose kernels reported a fault, with the CPU executor's error.
void checkKernelFaults(cuda::Device& device, const ir::Graph& graph, const Replica& replica) {
  for (size_t i = 0; i < replica.faults.size(); ++i) {
    const cuda::KernelFault& fault = replica.faults[i];
    if (fault.slot == nullptr) continue;
    uint64_t position = cuda::kNoFault;
    device.download(&position, fault.slot, sizeof position);
    if (position == cuda::kNoFault) continue;
    const ir::Op& op = graph.ops()[i];
    if (fault.kind == cuda::KernelFault::Kind::kDivisionByZero) throw invalid(op, "integer division by zero");
    int64_t value = 0;  // an integer tensor is int64 on the device (element.hpp)
    device.download(&value, static_cast<const int64_t*>(fault.values.data) + position, sizeof value);
    const std::string at = std::to_string(position);
    switch (fault.kind) {
      case cuda::KernelFault::Kind::kLabelOfRow: throw invalid(op, notAClass(value, "of row " + at, fault.length));
      case cuda::KernelFault::Kind::kLabelAtPosition:
        throw invalid(op, notAClass(value, "at position " + at, fault.length));
      default: throw invalid(op, indexOutOfRange(value, fault.length));
    }
  }
}

// `collective`: what all-reduces across the replicas, or null for one replica.
Replica prepare(cuda::Device& device, const ir::Graph& graph, const std::vector<ir::TensorValue>& fed,
                const cuda::Collective* collective) {
  const bool across_replicas = collective != nullptr;
  Replica replica;
  replica.refs.resize(graph.tensors().size());
  // Every tensor's buffer for the whole step; a Reshape's output aliases its input (in graph order).
  for (const ir::Tensor& tensor : graph.tensors()) {
    const ir::Op* producer = graph.producer(tensor.id);
    if (producer != nullptr && producer->type == OpType::kReshape) continue;
    Ref& ref = replica.refs[static_cast<size_t>(tensor.id)];
    ref = {device.allocate(bytesOf(tensor)), cuda::elemOf(tensor.dtype)};
    if (producer == nullptr) {
      const std::vector<unsigned char> bytes = deviceBytes(tensor, fed[static_cast<size_t>(tensor.id)]);
      device.upload(ref.data, bytes.data(), bytes.size());
    }
  }
  for (const ir::Op& op : graph.ops()) {
    if (op.type == OpType::kReshape) {
      replica.refs[static_cast<size_t>(op.outputs[0])] = replica.refs[static_cast<size_t>(op.inputs[0])];
    }
  }
  for (const ir::Op& op : graph.ops()) {
    try {
      const bool all_reduced = across_replicas && op.type == OpType::kAllReduce && op.replicas > 1;
      cuda::PlannedOp planned =
          all_reduced ? cuda::PlannedOp{{}, {}, collective->kernel()} : cuda::planOp(device, graph, op, replica.refs);
      replica.launches.push_back(std::move(planned.launch));
      replica.faults.push_back(planned.fault);
      replica.kernels.push_back(std::move(planned.kernel));
    } catch (const Error& error) {
      throw error.within("op '" + op.name + "'");
    }
  }
  return replica;
}

}  // namespace

std::vector<TimedRun> CudaExecutor::runBound(const std::vector<cuda::Device*>& devices, cuda::Collective* collective,
                                             const std::vector<std::vector<ir::TensorValue>>& fed,
                                             const TimingOptions& timing) const {
  const size_t count = devices.size();
  const bool across = count > 1;
  std::vector<Replica> replicas;
  for (size_t r = 0; r < count; ++r)
    replicas.push_back(prepare(*devices[r], m_graph, fed[r], across ? collective : nullptr));

  const size_t ops = m_graph.ops().size();
  std::vector<std::vector<std::vector<double>>> samples(count, std::vector<std::vector<double>>(ops));
  for (int run = 0; run < timing.warmup + timing.repeats; ++run) {
    for (size_t i = 0; i < ops; ++i) {
      const ir::Op& op = m_graph.ops()[i];
      try {
        for (cuda::Device* device : devices) device->startTimer();
        if (across && op.type == OpType::kAllReduce && op.replicas > 1) {
          std::vector<Ref> inputs, outputs;
          for (const Replica& replica : replicas) {
            inputs.push_back(replica.refs[static_cast<size_t>(op.inputs[0])]);
            outputs.push_back(replica.refs[static_cast<size_t>(op.outputs[0])]);
          }
          collective->allReduceSum(inputs, outputs, ir::elementCount(m_graph.tensor(op.outputs[0]).shape));
        } else {
          for (size_t r = 0; r < count; ++r) replicas[r].launches[i](*devices[r]);
        }
        for (size_t r = 0; r < count; ++r) {
          const double seconds = devices[r]->stopTimer();
          if (run >= timing.warmup) samples[r][i].push_back(seconds);
        }
      } catch (const Error& error) {
        throw error.within("op '" + op.name + "'");
      }
    }
    // Every run computes from the same inputs: the first shows any fault the kernels will report.
    if (run == 0) {
      for (size_t r = 0; r < count; ++r) checkKernelFaults(*devices[r], m_graph, replicas[r]);
    }
  }

  std::vector<TimedRun> timed(count);
  for (size_t r = 0; r < count; ++r) {
    timed[r].values.resize(m_graph.tensors().size());
    for (const ir::Tensor& tensor : m_graph.tensors()) {
      if (!m_copied_back[static_cast<size_t>(tensor.id)]) continue;
      std::vector<unsigned char> bytes(bytesOf(tensor));
      devices[r]->download(bytes.data(), replicas[r].refs[static_cast<size_t>(tensor.id)].data, bytes.size());
      timed[r].values[static_cast<size_t>(tensor.id)] = hostValue(tensor, bytes);
    }
    for (std::vector<double>& op_samples : samples[r]) timed[r].op_seconds.push_back(medianOf(op_samples));
    timed[r].device_peak_bytes = devices[r]->peakBytes();
    timed[r].op_kernels = replicas[r].kernels;
  }
  return timed;
}

}  // namespace tpusim::reference
