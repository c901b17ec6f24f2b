// The CPU reference kernels of the IR ops. Accumulation order is fixed and
// documented per kernel (it decides the last bits), and results are rounded
// to the output's dtype, so the same inputs give the same bits whatever the
// thread count.
//
// Values are held as double (TensorValue::floats); each kernel computes in
// its template type T: float for f32, bf16 and f16 tensors, double for f64
// (explicitly instantiated for both). An f32 value is exactly a float, so the
// float instantiation gives the bits a float-only kernel gives.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tpusim::reference {

// out[m, n] = sum over k = 0, 1, ... K-1 of op(a)[m, k] * op(b)[k, n], accumulated in
// T in increasing k; a is [M, K] (or [K, M] transposed), b is [K, N] (or [N, K]).
// Rows of the output are split over `threads` threads.
template <typename T>
void matmul(std::span<const double> a, std::span<const double> b, std::span<double> out, int64_t m, int64_t k,
            int64_t n, bool transpose_a, bool transpose_b, int threads);

// Mean over rows of -log softmax(logits[r])[labels[r]], computed per row as
// log(sum_c exp(l_c - max)) + max - l_label, summed over rows in order, divided by rows.
template <typename T>
T softmaxCrossEntropy(std::span<const double> logits, std::span<const int64_t> labels, int64_t rows, int64_t classes);
// (softmax(logits[r]) - onehot(labels[r])) / rows.
template <typename T>
void softmaxCrossEntropyGrad(std::span<const double> logits, std::span<const int64_t> labels, std::span<double> out,
                             int64_t rows, int64_t classes);

// The batched form over the last two dimensions, batch dimensions broadcast
// as numpy does; each batch element is one matmul() above.
template <typename T>
void batchedMatmul(std::span<const double> a, const std::vector<int64_t>& a_shape, std::span<const double> b,
                   const std::vector<int64_t>& b_shape, std::span<double> out, const std::vector<int64_t>& out_shape,
                   bool transpose_a, bool transpose_b, int threads);

// Softmax or log-softmax of x (viewed as [outer, length, inner]) along the middle axis,
// with the maximum subtracted first; sums run in increasing index order.
template <typename T>
void softmax(std::span<const double> x, std::span<double> out, int64_t outer, int64_t length, int64_t inner, bool log);

// ONNX NegativeLogLikelihoodLoss: logp is [N, C, D] (D = product of trailing dims), labels
// [N, D], weights [C] or empty. reduction 0 none (out is [N, D]), 1 sum, 2 mean (divided by
// the summed weights of the counted labels). Labels equal to ignore_index count for nothing.
template <typename T>
void nllLoss(std::span<const double> logp, std::span<const int64_t> labels, std::span<const double> weights,
             std::span<double> out, int64_t n, int64_t c, int64_t d, int reduction, const int64_t* ignore_index);

// Checks that every label is a class id in [0, classes); throws Error naming the first bad one.
void checkLabels(std::span<const int64_t> labels, int64_t classes);

// to = to + term, in T (to holds a value of T).
template <typename T>
inline void accumulate(double& to, T term) {
  to = static_cast<T>(static_cast<T>(to) + term);
}

}  // namespace tpusim::reference
