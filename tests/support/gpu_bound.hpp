// The bound the CUDA executor's results on a GPU are held to against the CPU executor's: the
// project's kernels add in the CPU's order, but the GPU's exp, log, tanh and erf differ from
// glibc's by an ulp or two and cuBLAS and cuDNN add in their own order, so a floating tensor is
// bounded normwise (max |gpu - cpu| / max |cpu|): 1e-4 in f32, 2e-2 where the tensor is bf16
// or f16 (a rounding flip there is 2^-8). Integers and non-finite values must match. What
// additions compute is bounded against the magnitudes they added instead (GpuStepBound).
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "frontend/ir/graph.hpp"
#include "frontend/ir/tensor_value.hpp"
#include "reference/cpu/broadcast.hpp"
#include "sim/common/dtype.hpp"

namespace tpusim::testing {

struct GpuTensorCheck {
  std::string problem;  // empty within the bound
  double normwise = 0;  // max |gpu - cpu| / max |cpu| over the finite values
  double of_added = -1;  // GpuStepBound, past the normwise bound: max |gpu - cpu| / the magnitudes added
};

inline double gpuBound(DType dtype) {
  return dtype == DType::kF32 ? 1e-4 : 2e-2;
}

inline GpuTensorCheck checkGpuTensor(const ir::Tensor& tensor, const ir::TensorValue& gpu, const ir::TensorValue& cpu) {
  GpuTensorCheck check;
  const std::string name = "'" + tensor.name + "' (" + dtypeName(tensor.dtype) + ")";
  if (gpu.ints != cpu.ints) return {name + ": the integers differ", 0};
  if (gpu.floats.size() != cpu.floats.size()) return {name + ": the sizes differ", 0};
  double error = 0, scale = 0;
  for (size_t i = 0; i < gpu.floats.size(); ++i) {
    const double a = gpu.floats[i], b = cpu.floats[i];
    if (!std::isfinite(b) || !std::isfinite(a)) {
      if (std::isnan(b) ? !std::isnan(a) : a != b) {
        return {name + "[" + std::to_string(i) + "] is " + std::to_string(a) + " on the GPU, " + std::to_string(b) +
                    " on the CPU",
                0};
      }
      continue;
    }
    error = std::max(error, std::abs(a - b));
    scale = std::max(scale, std::abs(b));
  }
  check.normwise = error / std::max(scale, 1e-30);
  if (error > gpuBound(tensor.dtype) * std::max(scale, 1e-30)) {
    check.problem = name + ": normwise error " + std::to_string(check.normwise) + " over the bound " +
                    std::to_string(gpuBound(tensor.dtype));
  }
  return check;
}

// Additions round differently in another order, and after cancellation their relative error can be
// any size: the CPU executor adds a sum's terms one after another, the GPU device sums chunks'
// sums (reference/cuda/kernels/reduce.hpp). Each order's result is within k u sum|terms| of the exact
// one, k additions deep, u = 2^-24 (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed.,
// section 4.2). So a tensor additions compute (Add, Sub, Reduce sum or mean, ReduceSumTo) is held to
// max |gpu - cpu| <= max(gpuBound, 2 k u) max m, m being the magnitudes added into each element,
// carried through chains of additions; any other tensor to checkGpuTensor's bound.
class GpuStepBound {
 public:
  // `cpu`: the CPU executor's values of every tensor of `graph`, by id.
  GpuStepBound(const ir::Graph& graph, const std::vector<ir::TensorValue>& cpu)
      : m_cpu(cpu), m_magnitudes(cpu.size()), m_depth(cpu.size(), 0) {
    for (size_t t = 0; t < cpu.size(); ++t) {
      for (double v : cpu[t].floats) m_magnitudes[t].push_back(std::abs(v));
    }
    for (const ir::Op& op : graph.ops()) {
      for (int out : op.outputs) carry(op, static_cast<size_t>(out));
    }
  }

  GpuTensorCheck check(const ir::Tensor& tensor, const ir::TensorValue& gpu) const {
    const auto id = static_cast<size_t>(tensor.id);
    GpuTensorCheck check = checkGpuTensor(tensor, gpu, m_cpu[id]);
    if (m_depth[id] == 0 || check.problem.find("normwise") == std::string::npos) return check;
    double error = 0, scale = 0;
    for (size_t i = 0; i < gpu.floats.size(); ++i) {  // the finite values (checkGpuTensor matched the rest)
      if (!std::isfinite(m_cpu[id].floats[i])) continue;
      error = std::max(error, std::abs(gpu.floats[i] - m_cpu[id].floats[i]));
      scale = std::max(scale, m_magnitudes[id][i]);
    }
    const double bound =
        std::max(gpuBound(tensor.dtype), 2.0 * static_cast<double>(m_depth[id]) * std::ldexp(1.0, -24));
    check.of_added = error / std::max(scale, 1e-30);
    check.problem.clear();
    if (error > bound * std::max(scale, 1e-30)) {
      check.problem = "'" + tensor.name + "' (" + dtypeName(tensor.dtype) + "), added " + std::to_string(m_depth[id]) +
                      " deep: error " + std::to_string(check.of_added) + " of the magnitudes added, over the bound " +
                      std::to_string(bound);
    }
    return check;
  }

 private:
  void carry(const ir::Op& op, size_t out) {
    if (m_cpu[out].floats.empty() || op.inputs.empty()) return;
    const auto in = [&](size_t i) { return static_cast<size_t>(op.inputs[i]); };
    const ir::Shape& out_shape = m_cpu[out].shape;
    std::vector<double>& m = m_magnitudes[out];
    if ((op.type == ir::OpType::kAdd || op.type == ir::OpType::kSub) && op.inputs.size() == 2 &&
        !m_cpu[in(0)].floats.empty() && !m_cpu[in(1)].floats.empty()) {
      reference::broadcastBinary<double>(m_magnitudes[in(0)], m_cpu[in(0)].shape, m_magnitudes[in(1)],
                                         m_cpu[in(1)].shape, m, out_shape, [](double a, double b) { return a + b; });
      m_depth[out] = std::max(m_depth[in(0)], m_depth[in(1)]) + 1;
      return;
    }
    const bool mean = op.type == ir::OpType::kReduce && op.reduction == ir::Reduction::kMean;
    if (op.type != ir::OpType::kReduceSumTo &&
        !(op.type == ir::OpType::kReduce && (mean || op.reduction == ir::Reduction::kSum)))
      return;
    const ir::TensorValue& x = m_cpu[in(0)];
    if (x.floats.empty()) return;
    ir::Shape kept = out_shape;  // right-aligned to x, 1 along each dimension summed over
    if (op.type == ir::OpType::kReduce) {
      kept = x.shape;
      for (int64_t axis : op.perm) kept[static_cast<size_t>(axis)] = 1;
    }
    reference::reduceSumTo<double>(m_magnitudes[in(0)], x.shape, m, kept);
    const int64_t terms = ir::elementCount(x.shape) / std::max<int64_t>(1, ir::elementCount(kept));
    if (mean) {
      for (double& v : m) v /= static_cast<double>(std::max<int64_t>(1, terms));
    }
    m_depth[out] = m_depth[in(0)] + terms;
  }

  const std::vector<ir::TensorValue>& m_cpu;
  std::vector<std::vector<double>> m_magnitudes;  // by tensor id
  std::vector<int64_t> m_depth;                   // additions deep, by tensor id (0: none)
};

}  // namespace tpusim::testing
