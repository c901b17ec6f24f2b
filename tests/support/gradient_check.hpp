// Gradient checks for the CPU executor's tests: each weight's gradient, recovered
// from its SGD update as (w - w') / rate, against central differences of the loss,
// (loss(w + h) - loss(w - h)) / 2h, element by element.
//
// Per dtype (finiteDifferencesFor):
//   f64: h = 1e-6, |analytic - numeric| <= 1e-9 + 1e-7 |numeric|. Central differences
//        err by O(h^2 f''') ~ 1e-12 and lose about 1e-16 |loss| / h ~ 1e-10 to rounding.
//   f32: h = 1e-2, 2e-3 + 2e-2 |numeric|: float rounding of the loss dominates.
// The perturbed weight is rounded to its dtype and the quotient taken over the step
// actually made, so an f32 weight stays a float.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "frontend/ir/graph.hpp"
#include "frontend/ir/tensor_value.hpp"
#include "reference/cpu/cpu_executor.hpp"
#include "sim/common/numerics.hpp"

namespace tpusim::testing {

struct FiniteDifferences {
  double step = 1e-6;
  double atol = 1e-9;
  double rtol = 1e-7;
};

inline FiniteDifferences finiteDifferencesFor(DType dtype) {
  if (dtype == DType::kF64) return FiniteDifferences{1e-6, 1e-9, 1e-7};
  return FiniteDifferences{1e-2, 2e-3, 2e-2};
}

using Feeds = std::map<std::string, ir::TensorValue>;

// The loss: the graph's last output, a scalar.
inline double lossOf(const reference::CpuExecutor& executor, const ir::Graph& graph, const Feeds& feeds) {
  return executor.run(feeds)[static_cast<size_t>(graph.outputs().back())].floats.at(0);
}

// Compares every trained weight's gradient with central differences; returns how many
// weights were checked. Trained weights are those written by an SGD update at `rate`.
inline int expectGradientsMatch(const ir::Graph& graph, const Feeds& feeds, double rate, FiniteDifferences fd) {
  const reference::CpuExecutor executor(graph, reference::CpuOptions{});
  const auto values = executor.run(feeds);
  int weights_checked = 0;
  double worst = 0;  // the largest error, as a fraction of its tolerance
  for (const ir::Tensor& t : graph.tensors()) {
    if (t.alias_of < 0 || t.role != ir::TensorRole::kWeight) continue;
    ++weights_checked;
    const std::string weight = graph.tensor(t.alias_of).name;
    const DType dtype = graph.tensor(t.alias_of).dtype;
    for (size_t i = 0; i < feeds.at(weight).floats.size(); ++i) {
      const double w = feeds.at(weight).floats[i];
      const double analytic = (w - values[static_cast<size_t>(t.id)].floats[i]) / rate;
      Feeds plus = feeds;
      Feeds minus = feeds;
      const double up = numerics::roundTo(dtype, w + fd.step);
      const double down = numerics::roundTo(dtype, w - fd.step);
      plus[weight].floats[i] = up;
      minus[weight].floats[i] = down;
      const double numeric = (lossOf(executor, graph, plus) - lossOf(executor, graph, minus)) / (up - down);
      const double tolerance = fd.atol + fd.rtol * std::abs(numeric);
      worst = std::max(worst, std::abs(analytic - numeric) / tolerance);
      EXPECT_NEAR(analytic, numeric, tolerance) << weight << "[" << i << "]";
    }
  }
  ::testing::Test::RecordProperty("worst_error_over_tolerance", std::to_string(worst));
  return weights_checked;
}

// The dtypes a gradient test is built in, for INSTANTIATE_TEST_SUITE_P.
inline auto gradientDTypes() {
  return ::testing::Values(DType::kF64, DType::kF32);
}

inline std::string dtypeParamName(const ::testing::TestParamInfo<DType>& info) {
  return dtypeName(info.param);
}

}  // namespace tpusim::testing
