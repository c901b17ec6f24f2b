#include "reference/cpu/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>

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

void reduceRows(std::span<const float> x, std::span<float> out, int64_t rows, int64_t cols) {
  std::fill(out.begin(), out.end(), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) out[static_cast<size_t>(c)] += x[static_cast<size_t>(r * cols + c)];
  }
}

}  // namespace tpusim::reference
