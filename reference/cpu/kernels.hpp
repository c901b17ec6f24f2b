// The CPU reference kernels of the IR ops, on float values. Accumulation
// order is fixed and documented per kernel (it decides the last bits), and
// results are rounded to the output's dtype, so the same inputs give the
// same bits whatever the thread count.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tpusim::reference {

// out[m, n] = sum over k = 0, 1, ... K-1 of op(a)[m, k] * op(b)[k, n], accumulated in
// float in increasing k; a is [M, K] (or [K, M] transposed), b is [K, N] (or [N, K]).
// Rows of the output are split over `threads` threads.
void matmul(std::span<const float> a, std::span<const float> b, std::span<float> out, int64_t m, int64_t k, int64_t n,
            bool transpose_a, bool transpose_b, int threads);

// Mean over rows of -log softmax(logits[r])[labels[r]], computed per row as
// log(sum_c exp(l_c - max)) + max - l_label, summed over rows in order, divided by rows.
float softmaxCrossEntropy(std::span<const float> logits, std::span<const int64_t> labels, int64_t rows,
                          int64_t classes);
// (softmax(logits[r]) - onehot(labels[r])) / rows.
void softmaxCrossEntropyGrad(std::span<const float> logits, std::span<const int64_t> labels, std::span<float> out,
                             int64_t rows, int64_t classes);

// The batched form over the last two dimensions, batch dimensions broadcast
// as numpy does; each batch element is one matmul() above.
void batchedMatmul(std::span<const float> a, const std::vector<int64_t>& a_shape, std::span<const float> b,
                   const std::vector<int64_t>& b_shape, std::span<float> out, const std::vector<int64_t>& out_shape,
                   bool transpose_a, bool transpose_b, int threads);

// Softmax or log-softmax of x (viewed as [outer, length, inner]) along the middle axis,
// with the maximum subtracted first; sums run in increasing index order.
void softmax(std::span<const float> x, std::span<float> out, int64_t outer, int64_t length, int64_t inner, bool log);

// ONNX NegativeLogLikelihoodLoss: logp is [N, C, D] (D = product of trailing dims), labels
// [N, D], weights [C] or empty. reduction 0 none (out is [N, D]), 1 sum, 2 mean (divided by
// the summed weights of the counted labels). Labels equal to ignore_index count for nothing.
void nllLoss(std::span<const float> logp, std::span<const int64_t> labels, std::span<const float> weights,
             std::span<float> out, int64_t n, int64_t c, int64_t d, int reduction, const int64_t* ignore_index);

// Checks that every label is a class id in [0, classes); throws Error naming the first bad one.
void checkLabels(std::span<const int64_t> labels, int64_t classes);

}  // namespace tpusim::reference
