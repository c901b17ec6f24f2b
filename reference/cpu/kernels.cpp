#include "reference/cpu/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>

#include "reference/cpu/broadcast.hpp"
#include "sim/common/error.hpp"

namespace tpusim::reference {

namespace {

// Runs body(begin, end) over [0, count) in `threads` contiguous chunks.
template <typename Body>
void parallelRows(int64_t count, int threads, Body body) {
  const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(threads, count));
  if (workers == 1) {
    body(0, count);
    return;
  }
  const int64_t chunk = (count + workers - 1) / workers;
  std::vector<std::thread> pool;
  for (int64_t begin = 0; begin < count; begin += chunk) {
    pool.emplace_back(body, begin, std::min(count, begin + chunk));
  }
  for (std::thread& thread : pool) thread.join();
}

}  // namespace

void matmul(std::span<const float> a, std::span<const float> b, std::span<float> out, int64_t m, int64_t k, int64_t n,
            bool transpose_a, bool transpose_b, int threads) {
  // Strides of op(a)[row, i] and op(b)[i, col] in the stored layouts.
  const int64_t a_row = transpose_a ? 1 : k;
  const int64_t a_inner = transpose_a ? m : 1;
  const int64_t b_inner = transpose_b ? 1 : n;
  const int64_t b_col = transpose_b ? k : 1;
  parallelRows(m, threads, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      for (int64_t col = 0; col < n; ++col) {
        float sum = 0.0f;
        for (int64_t i = 0; i < k; ++i) {
          sum += a[static_cast<size_t>(row * a_row + i * a_inner)] * b[static_cast<size_t>(i * b_inner + col * b_col)];
        }
        out[static_cast<size_t>(row * n + col)] = sum;
      }
    }
  });
}

void checkLabels(std::span<const int64_t> labels, int64_t classes) {
  for (size_t r = 0; r < labels.size(); ++r) {
    if (labels[r] < 0 || labels[r] >= classes) {
      throw Error(ErrorKind::kInvalidInput, "label " + std::to_string(labels[r]) + " of row " + std::to_string(r) +
                                                " is not a class id in [0, " + std::to_string(classes) + ")");
    }
  }
}

namespace {

// log(sum_c exp(l_c - max)) + max: the log-sum-exp of one row, stable for large logits.
float logSumExp(const float* row, int64_t classes) {
  const float top = *std::max_element(row, row + classes);
  float sum = 0.0f;
  for (int64_t c = 0; c < classes; ++c) sum += std::exp(row[c] - top);
  return std::log(sum) + top;
}

}  // namespace

float softmaxCrossEntropy(std::span<const float> logits, std::span<const int64_t> labels, int64_t rows,
                          int64_t classes) {
  checkLabels(labels, classes);
  float total = 0.0f;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = logits.data() + r * classes;
    total += logSumExp(row, classes) - row[labels[static_cast<size_t>(r)]];
  }
  return total / static_cast<float>(rows);
}

void softmaxCrossEntropyGrad(std::span<const float> logits, std::span<const int64_t> labels, std::span<float> out,
                             int64_t rows, int64_t classes) {
  checkLabels(labels, classes);
  const float scale = 1.0f / static_cast<float>(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = logits.data() + r * classes;
    const float lse = logSumExp(row, classes);
    for (int64_t c = 0; c < classes; ++c) {
      const float softmax = std::exp(row[c] - lse);
      const float onehot = c == labels[static_cast<size_t>(r)] ? 1.0f : 0.0f;
      out[static_cast<size_t>(r * classes + c)] = (softmax - onehot) * scale;
    }
  }
}

void softmax(std::span<const float> x, std::span<float> out, int64_t outer, int64_t length, int64_t inner, bool log) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const auto at = [&](int64_t j) { return static_cast<size_t>((o * length + j) * inner + i); };
      float top = x[at(0)];
      for (int64_t j = 1; j < length; ++j) top = std::max(top, x[at(j)]);
      float sum = 0.0f;
      for (int64_t j = 0; j < length; ++j) sum += std::exp(x[at(j)] - top);
      const float log_sum = std::log(sum);
      for (int64_t j = 0; j < length; ++j) {
        out[at(j)] = log ? x[at(j)] - top - log_sum : std::exp(x[at(j)] - top) / sum;
      }
    }
  }
}

void nllLoss(std::span<const float> logp, std::span<const int64_t> labels, std::span<const float> weights,
             std::span<float> out, int64_t n, int64_t c, int64_t d, int reduction, const int64_t* ignore_index) {
  float total = 0.0f;
  float weight_sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) {
      const int64_t label = labels[static_cast<size_t>(i * d + j)];
      float loss = 0.0f;
      if (ignore_index == nullptr || label != *ignore_index) {
        if (label < 0 || label >= c) {
          throw Error(ErrorKind::kInvalidInput, "label " + std::to_string(label) + " at position " +
                                                    std::to_string(i * d + j) + " is not a class id in [0, " +
                                                    std::to_string(c) + ")");
        }
        const float weight = weights.empty() ? 1.0f : weights[static_cast<size_t>(label)];
        loss = -logp[static_cast<size_t>((i * c + label) * d + j)] * weight;
        weight_sum += weight;
      }
      if (reduction == 0) out[static_cast<size_t>(i * d + j)] = loss;
      total += loss;
    }
  }
  if (reduction == 1) out[0] = total;
  if (reduction == 2) out[0] = total / weight_sum;
}

void batchedMatmul(std::span<const float> a, const std::vector<int64_t>& a_shape, std::span<const float> b,
                   const std::vector<int64_t>& b_shape, std::span<float> out, const std::vector<int64_t>& out_shape,
                   bool transpose_a, bool transpose_b, int threads) {
  const size_t rank = out_shape.size();
  const int64_t m = out_shape[rank - 2];
  const int64_t n = out_shape[rank - 1];
  const int64_t k = transpose_a ? a_shape[a_shape.size() - 2] : a_shape[a_shape.size() - 1];
  const ir::Shape batch(out_shape.begin(), out_shape.end() - 2);
  // Strides in whole matrices of each operand's batch dimensions, broadcast to the output's.
  const auto sa = broadcastStrides(ir::Shape(a_shape.begin(), a_shape.end() - 2), batch);
  const auto sb = broadcastStrides(ir::Shape(b_shape.begin(), b_shape.end() - 2), batch);
  const int64_t batches = ir::elementCount(batch);
  std::vector<int64_t> index(batch.size(), 0);
  int64_t ia = 0;
  int64_t ib = 0;
  for (int64_t e = 0; e < batches; ++e) {
    matmul(a.subspan(static_cast<size_t>(ia * m * k), static_cast<size_t>(m * k)),
           b.subspan(static_cast<size_t>(ib * k * n), static_cast<size_t>(k * n)),
           out.subspan(static_cast<size_t>(e * m * n), static_cast<size_t>(m * n)), m, k, n, transpose_a, transpose_b,
           threads);
    for (size_t d = batch.size(); d-- > 0;) {
      if (++index[d] < batch[d]) {
        ia += sa[d];
        ib += sb[d];
        break;
      }
      ia -= sa[d] * (batch[d] - 1);
      ib -= sb[d] * (batch[d] - 1);
      index[d] = 0;
    }
  }
}

}  // namespace tpusim::reference
