// Dynamic loss scaling, as Keras's LossScaleOptimizer does it under mixed_float16
// (docs/frontend.md, "Loss scaling"): the gradient of the loss is seeded with the
// loss scale S instead of 1, so that small gradients survive f16's range in the
// backward pass; each weight gradient is then unscaled (times 1/S) and checked for
// infinities and NaNs, and when any gradient is not finite the step's update is
// skipped and S halved. The graph carries S as an input; the controller that halves
// it (api/functional.cpp for functional runs) sits outside the step.
#pragma once

#include <utility>
#include <vector>

#include "frontend/ir/graph.hpp"

namespace tpusim {

// The step's loss scale input (f32 scalar, optimizer state) and its "all gradients
// finite" output (bool scalar).
inline constexpr const char* kLossScaleTensor = "loss_scale";
inline constexpr const char* kGradientsFiniteTensor = "loss_scale.gradients_finite";
// Under pipeline parallelism each stage sums its own gradients (the partial, sent) and
// adds the other stages' partials (received; frontend/passes/pipeline_stages).
inline constexpr const char* kLossScalePartialTensor = "loss_scale.partial";
inline constexpr const char* kLossScaleOtherStagesTensor = "loss_scale.other_stages";
// Keras's defaults: initial_scale 2^15; the scale doubles after 2000 finite steps.
inline constexpr double kInitialLossScale = 32768.0;
inline constexpr int64_t kLossScaleGrowthSteps = 2000;

// Rewrites the (weight, scaled gradient) pairs an optimizer will read: each gradient g
// becomes where(finite, g, 0) / S, finite being whether the sum of every gradient is
// finite (one read of each gradient: the sum is infinite or NaN exactly when an element
// is, short of f32 overflow). The finite flag is marked an output.
std::vector<std::pair<int, int>> appendLossScaling(ir::Graph& graph, const std::vector<std::pair<int, int>>& updates,
                                                   int loss_scale);

}  // namespace tpusim
