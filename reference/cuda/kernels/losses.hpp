// Softmax, LogSoftmax and the losses of the CUDA executor, in the CPU executor's
// order (reference/cpu/kernels.hpp, training_kernels.hpp). A loss is two kernels:
// one thread per row (or element) writes its term to a float scratch buffer, then
// one thread adds the terms in row order, as the CPU executor's loop does.
#pragma once

#include "reference/cuda/kernels/element.hpp"

namespace tpusim::reference::cuda {

// x viewed as [outer, length, inner], normalized along the middle axis: one thread per (outer, inner).
struct SoftmaxArgs {
  int64_t outer = 0, length = 0, inner = 0;
  bool log = false;
  Ref x, out;
};

struct SoftmaxKernel {
  SoftmaxArgs a;

  TPUSIM_HD void operator()(int64_t line) const {
    const int64_t i = line % a.inner, o = line / a.inner;
    const auto at = [&](int64_t j) { return (o * a.length + j) * a.inner + i; };
    float top = loadFloat(a.x, at(0));
    for (int64_t j = 1; j < a.length; ++j) {
      const float v = loadFloat(a.x, at(j));
      top = top < v ? v : top;  // std::max
    }
    float sum = 0;
    for (int64_t j = 0; j < a.length; ++j) sum += expf(loadFloat(a.x, at(j)) - top);
    const float log_sum = logf(sum);
    for (int64_t j = 0; j < a.length; ++j) {
      const float v = loadFloat(a.x, at(j));
      storeFloat(a.out, at(j), a.log ? v - top - log_sum : expf(v - top) / sum);
    }
  }
};

TPUSIM_HD inline bool isClass(int64_t label, int64_t classes) {
  return label >= 0 && label < classes;
}

// SoftmaxCrossEntropy and its gradient on [rows, classes] logits and int64 labels. A label out
// of range (computed labels are checked here) is reported (reportFault) and its row taken as 0.
struct CrossEntropyArgs {
  int64_t rows = 0, classes = 0;
  Ref logits, labels, out;
  float* terms = nullptr;  // [rows] scratch of the loss
  uint64_t* fault = nullptr;
};

TPUSIM_HD inline float rowLogSumExp(const CrossEntropyArgs& a, int64_t r) {
  float top = loadFloat(a.logits, r * a.classes);
  for (int64_t c = 1; c < a.classes; ++c) {
    const float v = loadFloat(a.logits, r * a.classes + c);
    top = top < v ? v : top;  // std::max_element: the first maximum
  }
  float sum = 0;
  for (int64_t c = 0; c < a.classes; ++c) sum += expf(loadFloat(a.logits, r * a.classes + c) - top);
  return logf(sum) + top;
}

struct CrossEntropyTermKernel {  // one thread per row
  CrossEntropyArgs a;
  TPUSIM_HD void operator()(int64_t r) const {
    const int64_t label = loadInt(a.labels, r);
    if (!isClass(label, a.classes)) {
      reportFault(a.fault, r);
      a.terms[r] = 0;
      return;
    }
    a.terms[r] = rowLogSumExp(a, r) - loadFloat(a.logits, r * a.classes + label);
  }
};

struct CrossEntropyTotalKernel {  // one thread
  CrossEntropyArgs a;
  TPUSIM_HD void operator()(int64_t) const {
    float total = 0;
    for (int64_t r = 0; r < a.rows; ++r) total += a.terms[r];
    storeFloat(a.out, 0, total / static_cast<float>(a.rows));
  }
};

struct CrossEntropyGradKernel {  // one thread per row
  CrossEntropyArgs a;
  TPUSIM_HD void operator()(int64_t r) const {
    const float scale = 1.0f / static_cast<float>(a.rows);
    const float lse = rowLogSumExp(a, r);
    const int64_t label = loadInt(a.labels, r);
    if (!isClass(label, a.classes)) {
      reportFault(a.fault, r);
      for (int64_t c = 0; c < a.classes; ++c) storeFloat(a.out, r * a.classes + c, 0.0f);
      return;
    }
    for (int64_t c = 0; c < a.classes; ++c) {
      const float softmax = expf(loadFloat(a.logits, r * a.classes + c) - lse);
      storeFloat(a.out, r * a.classes + c, (softmax - (c == label ? 1.0f : 0.0f)) * scale);
    }
  }
};

// ONNX NegativeLogLikelihoodLoss and its gradient: logp [n, c, d], labels [n, d] (in range
// or ignore_index: one out of range is reported and counts as ignored), weights [c] or none.
// reduction 0 none, 1 sum, 2 mean.
struct NllArgs {
  int64_t n = 0, c = 0, d = 0;
  int reduction = 2;
  bool has_ignore = false;
  int64_t ignore_index = 0;
  bool has_weights = false;
  bool gradient = false;  // NllLossGrad: the totals are not stored to `out`
  Ref logp, labels, weights, out;
  float* terms = nullptr;    // [n d] scratch: each position's loss
  float* weighed = nullptr;  // [n d] scratch: each position's weight (0 where ignored)
  uint64_t* fault = nullptr;
};

TPUSIM_HD inline bool counted(const NllArgs& a, int64_t label) { return !a.has_ignore || label != a.ignore_index; }

// Whether position p's label is counted, reporting one that is neither ignored nor a class.
TPUSIM_HD inline bool countedClass(const NllArgs& a, int64_t label, int64_t p) {
  if (!counted(a, label)) return false;
  if (isClass(label, a.c)) return true;
  reportFault(a.fault, p);
  return false;
}

TPUSIM_HD inline float classWeight(const NllArgs& a, int64_t label) {
  return a.has_weights ? loadFloat(a.weights, label) : 1.0f;
}

struct NllTermKernel {  // one thread per position (i, j)
  NllArgs a;
  TPUSIM_HD void operator()(int64_t p) const {
    const int64_t i = p / a.d, j = p % a.d;
    const int64_t label = loadInt(a.labels, p);
    float loss = 0, weight = 0;
    if (countedClass(a, label, p)) {
      weight = classWeight(a, label);
      loss = -loadFloat(a.logp, (i * a.c + label) * a.d + j) * weight;
    }
    a.terms[p] = loss;
    a.weighed[p] = weight;
    if (!a.gradient && a.reduction == 0) storeFloat(a.out, p, loss);
  }
};

struct NllTotalKernel {  // one thread: the sums in position order
  NllArgs a;
  TPUSIM_HD void operator()(int64_t) const {
    float total = 0, weight_sum = 0;
    for (int64_t p = 0; p < a.n * a.d; ++p) {
      total += a.terms[p];
      const int64_t label = loadInt(a.labels, p);
      if (counted(a, label)) weight_sum += a.weighed[p];
    }
    if (!a.gradient && a.reduction == 1) storeFloat(a.out, 0, total);
    if (!a.gradient && a.reduction == 2) storeFloat(a.out, 0, total / weight_sum);
    a.terms[0] = weight_sum;  // for NllGradKernel
  }
};

// After NllTermKernel and NllTotalKernel (terms[0] holds the summed weights) and a zeroed
// output: -weight[label] (/ the summed weights for mean) at each counted label's score.
struct NllGradKernel {  // one thread per position
  NllArgs a;
  TPUSIM_HD void operator()(int64_t p) const {
    const int64_t i = p / a.d, j = p % a.d;
    const int64_t label = loadInt(a.labels, p);
    if (!countedClass(a, label, p)) return;
    const float denominator = a.reduction == 2 ? a.terms[0] : 1.0f;
    storeFloat(a.out, (i * a.c + label) * a.d + j, -classWeight(a, label) / denominator);
  }
};

// The MSE loss: the mean of (x - t)^2, summed in index order in double. One thread.
struct MseArgs {
  int64_t count = 0;
  Ref x, t, out;
};

struct MseKernel {
  MseArgs a;
  TPUSIM_HD void operator()(int64_t) const {
    double total = 0;
    for (int64_t i = 0; i < a.count; ++i) {
      const double d = static_cast<double>(loadFloat(a.x, i)) - static_cast<double>(loadFloat(a.t, i));
      total += d * d;
    }
    storeDouble(a.out, 0, a.count > 0 ? total / static_cast<double>(a.count) : 0.0);
  }
};

}  // namespace tpusim::reference::cuda
