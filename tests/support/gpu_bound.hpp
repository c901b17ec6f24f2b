// The bound the CUDA executor's results on a GPU are held to against the CPU executor's: the
// project's kernels add in the CPU's order, but the GPU's exp, log, tanh and erf differ from
// glibc's by an ulp or two and cuBLAS and cuDNN add in their own order, so a floating tensor is
// bounded normwise (max |gpu - cpu| / max |cpu|): 1e-4 in f32, 2e-2 where the tensor is bf16
// or f16 (a rounding flip there is 2^-8). Integers and non-finite values must match.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>

#include "frontend/ir/graph.hpp"
#include "frontend/ir/tensor_value.hpp"
#include "sim/common/dtype.hpp"

namespace tpusim::testing {

struct GpuTensorCheck {
  std::string problem;  // empty within the bound
  double normwise = 0;  // max |gpu - cpu| / max |cpu| over the finite values
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

}  // namespace tpusim::testing
