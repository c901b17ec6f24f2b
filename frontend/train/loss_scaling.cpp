#include "frontend/train/loss_scaling.hpp"

#include <string>

namespace tpusim {

using ir::OpType;
using ir::TensorRole;

std::vector<std::pair<int, int>> appendLossScaling(ir::Graph& graph, const std::vector<std::pair<int, int>>& updates,
                                                   int loss_scale) {
  graph.setPhase(ir::Phase::kLossScaling);
  const auto grad = TensorRole::kGradient;
  // Each gradient's sum, read as soon as the gradient is ready; then a tree of adds, so
  // the check waits log2(gradients) adds after the last gradient, not one per gradient.
  // The scaled sum is finite exactly when the unscaled one is (1/S is a finite power of
  // two), short of overflowing f32.
  std::vector<int> sums;
  for (const auto& [weight, gradient] : updates) {
    sums.push_back(
        graph.reduce(graph.tensor(weight).name + ".grad_scaled.sum", gradient, ir::Reduction::kSum, {}, false));
  }
  for (int level = 0; sums.size() > 1; ++level) {
    std::vector<int> next;
    for (size_t i = 0; i + 1 < sums.size(); i += 2) {
      next.push_back(graph.add("loss_scale.sum" + std::to_string(level) + "." + std::to_string(i / 2), sums[i],
                               sums[i + 1], grad));
    }
    if (sums.size() % 2 == 1) next.push_back(sums.back());
    sums = std::move(next);
  }
  // x is finite exactly when x - x equals itself: inf - inf and NaN - anything are NaN.
  const int difference = graph.binary(OpType::kSub, "loss_scale.difference", sums[0], sums[0], grad);
  const int finite = graph.compare(ir::CompareDirection::kEq, "loss_scale.finite", difference, difference);
  graph.rename(finite, kGradientsFiniteTensor);
  graph.markOutput(finite);
  // A skipped step's update adds zero: S - S, 0 since the scale is finite.
  const int zero = graph.binary(OpType::kSub, "loss_scale.zero", loss_scale, loss_scale, grad);
  const int inverse = graph.unary(ir::UnaryKind::kReciprocal, "loss_scale.inverse", loss_scale);
  // where(finite, g, 0) / S: the select first, so that the unscaling fuses behind it and
  // each gradient is read once more (an overflowed g times 0 would be NaN, not 0).
  std::vector<std::pair<int, int>> gated;
  for (const auto& [weight, gradient] : updates) {
    const std::string base = graph.tensor(weight).name + ".grad";
    const int kept = graph.where(base + "_kept", finite, gradient, zero, grad);
    gated.emplace_back(weight, graph.binary(OpType::kMul, base + "_unscaled", kept, inverse, grad));
  }
  return gated;
}

}  // namespace tpusim
