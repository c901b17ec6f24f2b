#include "reference/cpu/cpu_executor.hpp"

#include <cmath>

#include "reference/cpu/kernels.hpp"
#include "sim/common/error.hpp"
#include "sim/common/numerics.hpp"

namespace tpusim::reference {

namespace {

using ir::OpType;
using ir::TensorValue;

}  // namespace

CpuExecutor::CpuExecutor(const ir::Graph& graph, CpuOptions options) : m_graph(graph), m_options(options) {
  if (m_options.threads < 1) throw Error(ErrorKind::kInvalidConfig, "the CPU executor needs at least one thread");
}

std::vector<TensorValue> CpuExecutor::run(const std::map<std::string, TensorValue>& feeds) const {
  std::vector<TensorValue> values(m_graph.tensors().size());
  for (const ir::Tensor& tensor : m_graph.tensors()) {
    if (m_graph.producer(tensor.id) != nullptr) continue;
    auto feed = feeds.find(tensor.name);
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
    values[static_cast<size_t>(tensor.id)] = feed->second;
  }
  for (const ir::Op& op : m_graph.ops()) {
    try {
      runOp(op, values);
    } catch (const Error& error) {
      throw error.within("op '" + op.name + "'");
    }
  }
  return values;
}

void CpuExecutor::runOp(const ir::Op& op, std::vector<TensorValue>& values) const {
  const ir::Tensor& out_tensor = m_graph.tensor(op.outputs[0]);
  TensorValue out = TensorValue::zeros(out_tensor.shape, out_tensor.dtype);
  auto in = [&](size_t i) -> const TensorValue& { return values[static_cast<size_t>(op.inputs[i])]; };
  std::vector<float>& y = out.floats;
  switch (op.type) {
    case OpType::kMatMul: {
      const TensorValue& a = in(0);
      const int64_t k = op.transpose_a ? a.shape[0] : a.shape[1];
      matmul(a.floats, in(1).floats, y, out.shape[0], k, out.shape[1], op.transpose_a, op.transpose_b,
             m_options.threads);
      break;
    }
    case OpType::kAdd: {
      const std::vector<float>& a = in(0).floats;
      const std::vector<float>& b = in(1).floats;
      // b is a's shape, or one row broadcast over a's rows.
      for (size_t i = 0; i < y.size(); ++i) y[i] = a[i] + b[i % b.size()];
      break;
    }
    case OpType::kRelu: {
      const std::vector<float>& x = in(0).floats;
      for (size_t i = 0; i < y.size(); ++i) y[i] = std::isnan(x[i]) ? x[i] : (x[i] > 0.0f ? x[i] : 0.0f);
      break;
    }
    case OpType::kReluGrad: {
      const std::vector<float>& dy = in(0).floats;
      const std::vector<float>& x = in(1).floats;
      for (size_t i = 0; i < y.size(); ++i) y[i] = x[i] > 0.0f ? dy[i] : 0.0f;
      break;
    }
    case OpType::kSoftmaxCrossEntropy: {
      const TensorValue& logits = in(0);
      y[0] = softmaxCrossEntropy(logits.floats, in(1).ints, logits.shape[0], logits.shape[1]);
      break;
    }
    case OpType::kSoftmaxCrossEntropyGrad: {
      const TensorValue& logits = in(0);
      softmaxCrossEntropyGrad(logits.floats, in(1).ints, y, logits.shape[0], logits.shape[1]);
      break;
    }
    case OpType::kReduceRows: {
      const TensorValue& x = in(0);
      reduceRows(x.floats, y, x.shape[0], x.shape[1]);
      break;
    }
    case OpType::kSgdUpdate: {
      const std::vector<float>& w = in(0).floats;
      const std::vector<float>& g = in(1).floats;
      const auto rate = static_cast<float>(op.learning_rate);
      for (size_t i = 0; i < y.size(); ++i) y[i] = w[i] - rate * g[i];
      break;
    }
  }
  numerics::roundInPlace(out.dtype, y);
  values[static_cast<size_t>(op.outputs[0])] = std::move(out);
}

}  // namespace tpusim::reference
