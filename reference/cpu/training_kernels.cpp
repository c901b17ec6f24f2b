#include "reference/cpu/training_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "sim/common/error.hpp"

namespace tpusim::reference {

using ir::OptimizerKind;
using ir::UpdateTarget;

double mseLoss(std::span<const double> x, std::span<const double> t) {
  double total = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = x[i] - t[i];
    total += d * d;
  }
  return x.empty() ? 0.0 : total / static_cast<double>(x.size());
}

void mseLossGrad(std::span<const double> x, std::span<const double> t, std::span<double> out) {
  const double scale = 2.0 / static_cast<double>(std::max<size_t>(1, x.size()));
  for (size_t i = 0; i < x.size(); ++i) out[i] = scale * (x[i] - t[i]);
}

template <typename T>
void nllLossGrad(std::span<const int64_t> labels, std::span<const double> weights, std::span<double> out, int64_t n,
                 int64_t c, int64_t d, int reduction, const int64_t* ignore_index) {
  std::fill(out.begin(), out.end(), 0.0);
  T weight_sum = 0;  // as nllLoss() sums it
  for (int64_t i = 0; i < n * d; ++i) {
    const int64_t label = labels[static_cast<size_t>(i)];
    if (ignore_index != nullptr && label == *ignore_index) continue;
    if (label < 0 || label >= c) {
      throw Error(ErrorKind::kInvalidInput, "label " + std::to_string(label) + " at position " + std::to_string(i) +
                                                " is not a class id in [0, " + std::to_string(c) + ")");
    }
    weight_sum += weights.empty() ? T{1} : static_cast<T>(weights[static_cast<size_t>(label)]);
  }
  const T denominator = reduction == 2 ? weight_sum : T{1};
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) {
      const int64_t label = labels[static_cast<size_t>(i * d + j)];
      if (ignore_index != nullptr && label == *ignore_index) continue;
      const T weight = weights.empty() ? T{1} : static_cast<T>(weights[static_cast<size_t>(label)]);
      out[static_cast<size_t>((i * c + label) * d + j)] = -weight / denominator;
    }
  }
}

template void nllLossGrad<float>(std::span<const int64_t>, std::span<const double>, std::span<double>, int64_t, int64_t,
                                 int64_t, int, const int64_t*);
template void nllLossGrad<double>(std::span<const int64_t>, std::span<const double>, std::span<double>, int64_t,
                                  int64_t, int64_t, int, const int64_t*);

double scheduledRate(const ir::OptimizerConfig& config, double rate_input, int64_t step) {
  double rate = config.learning_rate * rate_input;
  if (config.warmup_steps > 0) {
    rate *= std::min(1.0, static_cast<double>(step + 1) / static_cast<double>(config.warmup_steps));
  }
  return rate;
}

void optimizerUpdate(const ir::OptimizerConfig& config, UpdateTarget target, const UpdateOperands& in,
                     std::span<double> out) {
  const std::span<const double> w = in.parameter;
  const std::span<const double> g = in.gradient;
  const double rate = scheduledRate(config, in.rate_input, in.step);
  const bool coupled_decay = !(config.kind == OptimizerKind::kAdam && config.decoupled_weight_decay);
  const double decay = coupled_decay ? config.weight_decay : 0.0;
  // The gradient with L2 regularization (coupled weight decay) added.
  // (A state update without it has no parameter operand.)
  auto reg = [&](size_t i) { return decay != 0 ? g[i] + decay * w[i] : g[i]; };
  auto write = [&](auto f) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = f(i);
  };
  const double b1 = config.beta1;
  const double b2 = config.beta2;
  switch (config.kind) {
    case OptimizerKind::kSgd: write([&](size_t i) { return w[i] - rate * reg(i); }); return;
    case OptimizerKind::kMomentum: {
      if (target == UpdateTarget::kFirstState) {
        const double c = in.step > 0 ? config.gradient_scale : 1.0;
        const std::span<const double> v = in.states[0];
        write([&](size_t i) { return b1 * v[i] + c * reg(i); });
      } else {
        const std::span<const double> v = in.states[0];  // already updated
        if (config.nesterov) {
          write([&](size_t i) { return w[i] - rate * (reg(i) + b1 * v[i]); });
        } else {
          write([&](size_t i) { return w[i] - rate * v[i]; });
        }
      }
      return;
    }
    case OptimizerKind::kAdam: {
      if (target == UpdateTarget::kFirstState) {
        const std::span<const double> m = in.states[0];
        write([&](size_t i) { return b1 * m[i] + (1.0 - b1) * reg(i); });
      } else if (target == UpdateTarget::kSecondState) {
        const std::span<const double> v = in.states[0];
        write([&](size_t i) {
          const double r = reg(i);
          return b2 * v[i] + (1.0 - b2) * r * r;
        });
      } else {
        const std::span<const double> m = in.states[0];
        const std::span<const double> v = in.states[1];
        const double t = static_cast<double>(in.step + config.bias_correction_offset);
        // Kingma & Ba's form: rate_t = rate sqrt(1 - beta2^t) / (1 - beta1^t); epsilon after the root.
        const double corrected = t > 0 ? rate * std::sqrt(1.0 - std::pow(b2, t)) / (1.0 - std::pow(b1, t)) : rate;
        const double decoupled = config.decoupled_weight_decay ? rate * config.weight_decay : 0.0;
        const double keep = 1.0 - config.post_decay;
        write([&](size_t i) {
          const double step = corrected * m[i] / (std::sqrt(v[i]) + config.epsilon);
          return (w[i] - step - decoupled * w[i]) * keep;
        });
      }
      return;
    }
    case OptimizerKind::kAdagrad: {
      if (target == UpdateTarget::kFirstState) {
        const std::span<const double> h = in.states[0];
        write([&](size_t i) {
          const double r = reg(i);
          return h[i] + r * r;
        });
      } else {
        const std::span<const double> h = in.states[0];
        const double r = rate / (1.0 + static_cast<double>(in.step) * config.decay_factor);
        write([&](size_t i) { return w[i] - r * reg(i) / (std::sqrt(h[i]) + config.epsilon); });
      }
      return;
    }
    case OptimizerKind::kLars: {
      if (target == UpdateTarget::kFirstState) {
        // You et al. 2017, Algorithm 1: local rate eta ||w|| / (||g|| + beta ||w||); 1 where a norm is 0.
        const double wn = in.scalars[0];
        const double gn = in.scalars[1];
        const double trust = wn > 0 && gn > 0 ? config.trust_coefficient * wn / (gn + config.weight_decay * wn) : 1.0;
        const std::span<const double> v = in.states[0];
        write([&](size_t i) { return b1 * v[i] + rate * trust * reg(i); });
      } else {
        const std::span<const double> v = in.states[0];
        write([&](size_t i) { return w[i] - v[i]; });
      }
      return;
    }
  }
}

}  // namespace tpusim::reference
