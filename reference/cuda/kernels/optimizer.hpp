// The optimizer updates of the CUDA executor (OptimizerUpdate), each element in
// double as the CPU executor computes them (reference/cpu/training_kernels.cpp),
// rounded once to the target's dtype. The step and the scalar operands (the rate
// input, LARS's norms) are read from device memory by every thread: the update
// depends on the step counter the graph itself advances.
#pragma once

#include "reference/cuda/kernels/element.hpp"

namespace tpusim::reference::cuda {

enum class Optimizer : int32_t { kSgd, kMomentum, kAdam, kAdagrad, kLars };  // ir::OptimizerKind's order
enum class Target : int32_t { kParameter, kFirstState, kSecondState, kStep };  // ir::UpdateTarget's order

struct OptimizerConfig {  // ir::OptimizerConfig
  Optimizer kind = Optimizer::kSgd;
  double learning_rate = 0.01;
  int64_t warmup_steps = 0;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8, weight_decay = 0;
  bool decoupled_weight_decay = false;
  double post_decay = 0, gradient_scale = 1;
  bool nesterov = false;
  double decay_factor = 0, trust_coefficient = 0.001;
  int64_t bias_correction_offset = 1;
};

struct OptimizerArgs {
  OptimizerConfig config;
  Target target = Target::kParameter;
  int64_t count = 0;
  Ref parameter;  // data null for a state update without coupled weight decay
  Ref gradient, step;
  Ref rate_input;  // data null: 1
  int states = 0;
  Ref state[2];    // as the op lists them
  Ref scalar[2];   // LARS: ||w||, ||g||
  Ref out;
};

struct OptimizerKernel {
  OptimizerArgs a;

  TPUSIM_HD void operator()(int64_t i) const {
    const int64_t step = loadInt(a.step, 0);
    if (a.target == Target::kStep) {
      storeInt(a.out, 0, step + 1);
      return;
    }
    const OptimizerConfig& c = a.config;
    const auto value = [](const Ref& ref, int64_t at) { return static_cast<double>(loadFloat(ref, at)); };
    double rate = c.learning_rate * (a.rate_input.data != nullptr ? value(a.rate_input, 0) : 1.0);
    if (c.warmup_steps > 0) {
      const double ramp = static_cast<double>(step + 1) / static_cast<double>(c.warmup_steps);
      rate *= ramp < 1.0 ? ramp : 1.0;
    }
    const bool coupled_decay = !(c.kind == Optimizer::kAdam && c.decoupled_weight_decay);
    const double decay = coupled_decay ? c.weight_decay : 0.0;
    const double g = value(a.gradient, i);
    const double reg = decay != 0 ? g + decay * value(a.parameter, i) : g;  // L2 added to the gradient
    const double s0 = a.states > 0 ? value(a.state[0], i) : 0.0;
    const double b1 = c.beta1, b2 = c.beta2;
    double result = 0;
    switch (c.kind) {
      case Optimizer::kSgd: result = value(a.parameter, i) - rate * reg; break;
      case Optimizer::kMomentum:
        if (a.target == Target::kFirstState) {
          result = b1 * s0 + (step > 0 ? c.gradient_scale : 1.0) * reg;
        } else {
          const double w = value(a.parameter, i);  // s0: the velocity, already updated
          result = c.nesterov ? w - rate * (reg + b1 * s0) : w - rate * s0;
        }
        break;
      case Optimizer::kAdam:
        if (a.target == Target::kFirstState) {
          result = b1 * s0 + (1.0 - b1) * reg;
        } else if (a.target == Target::kSecondState) {
          result = b2 * s0 + (1.0 - b2) * reg * reg;
        } else {
          const double w = value(a.parameter, i), v = value(a.state[1], i);
          const double t = static_cast<double>(step + c.bias_correction_offset);
          const double corrected = t > 0 ? rate * sqrt(1.0 - pow(b2, t)) / (1.0 - pow(b1, t)) : rate;
          const double decoupled = c.decoupled_weight_decay ? rate * c.weight_decay : 0.0;
          const double move = corrected * s0 / (sqrt(v) + c.epsilon);
          result = (w - move - decoupled * w) * (1.0 - c.post_decay);
        }
        break;
      case Optimizer::kAdagrad:
        if (a.target == Target::kFirstState) {
          result = s0 + reg * reg;
        } else {
          const double r = rate / (1.0 + static_cast<double>(step) * c.decay_factor);
          result = value(a.parameter, i) - r * reg / (sqrt(s0) + c.epsilon);
        }
        break;
      case Optimizer::kLars:
        if (a.target == Target::kFirstState) {
          // You et al. 2017, Algorithm 1: local rate eta ||w|| / (||g|| + beta ||w||); 1 where a norm is 0.
          const double wn = value(a.scalar[0], 0), gn = value(a.scalar[1], 0);
          const double trust = wn > 0 && gn > 0 ? c.trust_coefficient * wn / (gn + c.weight_decay * wn) : 1.0;
          result = b1 * s0 + rate * trust * reg;
        } else {
          result = value(a.parameter, i) - s0;
        }
        break;
    }
    storeDouble(a.out, i, result);
  }
};

}  // namespace tpusim::reference::cuda
