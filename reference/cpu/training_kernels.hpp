// The CPU reference kernels of the training ops: the MSE loss and its gradient,
// the NllLoss gradient, and the optimizer updates. Scalars (the rate, its warmup
// and bias-correction factors, LARS's trust ratio) are computed in double and
// each element in double, in index order; the executor then rounds the results
// to the tensor's dtype. Values are held as double (see kernels.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "frontend/ir/graph.hpp"

namespace tpusim::reference {

// Mean over all elements of (x - t)^2, summed in index order in double.
double mseLoss(std::span<const double> x, std::span<const double> t);
// 2 (x - t) / elements.
void mseLossGrad(std::span<const double> x, std::span<const double> t, std::span<double> out);

// The gradient of nllLoss() (kernels.hpp) for reduction 1 (sum) or 2 (mean), with dloss = 1:
// -weight[label] (divided by the summed weights of the counted labels for mean) at each
// counted label's score, 0 elsewhere. The weights are summed in T, as nllLoss<T> sums them.
template <typename T>
void nllLossGrad(std::span<const int64_t> labels, std::span<const double> weights, std::span<double> out, int64_t n,
                 int64_t c, int64_t d, int reduction, const int64_t* ignore_index);

// The rate of one optimizer step: learning_rate x rate_input x min(1, (step + 1) / warmup_steps).
double scheduledRate(const ir::OptimizerConfig& config, double rate_input, int64_t step);

// The operands of one OptimizerUpdate (graph.hpp gives their order), already unpacked.
struct UpdateOperands {
  std::span<const double> parameter;  // empty for a state update without coupled weight decay
  std::span<const double> gradient;
  int64_t step = 0;
  double rate_input = 1.0;
  std::vector<std::span<const double>> states;  // as the op lists them
  std::vector<double> scalars;                  // LARS: ||w||, ||g||
};

// Writes the op's target (never kStep, which is step + 1) into `out`.
void optimizerUpdate(const ir::OptimizerConfig& config, ir::UpdateTarget target, const UpdateOperands& in,
                     std::span<double> out);

}  // namespace tpusim::reference
