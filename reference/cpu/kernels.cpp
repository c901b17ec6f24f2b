#include "reference/cpu/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "reference/cpu/broadcast.hpp"
#include "sim/common/error.hpp"
#include "sim/common/parallel_rows.hpp"

namespace tpusim::reference {

namespace {

// op(b) in T, [k, n] row-major: what matmulPacked() reads.
template <typename T>
std::vector<T> packedB(std::span<const double> b, int64_t k, int64_t n, bool transpose_b) {
  const int64_t b_inner = transpose_b ? 1 : n;
  const int64_t b_col = transpose_b ? k : 1;
  std::vector<T> op_b(static_cast<size_t>(k * n));
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t col = 0; col < n; ++col) {
      op_b[static_cast<size_t>(i * n + col)] = static_cast<T>(b[static_cast<size_t>(i * b_inner + col * b_col)]);
    }
  }
  return op_b;
}

// Each out[row, col] sums its k products from zero in T, i increasing, every product and sum
// rounded in T. The sums of a block of rows over a tile of columns are carried side by side, so
// the inner loop runs along contiguous columns of op(b) (which the compiler vectorizes) while
// each element still gets its terms in that order; a thread's tile of op(b) is reused by all
// of its row blocks.
template <typename T>
void matmulPacked(std::span<const double> a, const std::vector<T>& op_b, std::span<double> out, int64_t m, int64_t k,
                  int64_t n, bool transpose_a, int threads) {
  // Strides of op(a)[row, i] in the stored layout.
  const int64_t a_row = transpose_a ? 1 : k;
  const int64_t a_inner = transpose_a ? m : 1;
  constexpr int64_t kBlockRows = 4, kTileCols = 256;
  parallelRows(m, threads, [&](int64_t begin, int64_t end) {
    std::vector<T> sums(static_cast<size_t>(kBlockRows * kTileCols));
    for (int64_t c0 = 0; c0 < n; c0 += kTileCols) {
      const int64_t cols = std::min(kTileCols, n - c0);
      for (int64_t r0 = begin; r0 < end; r0 += kBlockRows) {
        const int64_t rows = std::min(kBlockRows, end - r0);
        std::fill(sums.begin(), sums.end(), T{0});
        for (int64_t i = 0; i < k; ++i) {
          const T* b_row = op_b.data() + i * n + c0;
          for (int64_t r = 0; r < rows; ++r) {
            const auto av = static_cast<T>(a[static_cast<size_t>((r0 + r) * a_row + i * a_inner)]);
            T* sum = sums.data() + r * kTileCols;
            for (int64_t c = 0; c < cols; ++c) sum[c] = sum[c] + av * b_row[c];
          }
        }
        for (int64_t r = 0; r < rows; ++r) {
          std::copy_n(sums.begin() + r * kTileCols, cols, out.begin() + (r0 + r) * n + c0);
        }
      }
    }
  });
}

}  // namespace

template <typename T>
void matmul(std::span<const double> a, std::span<const double> b, std::span<double> out, int64_t m, int64_t k,
            int64_t n, bool transpose_a, bool transpose_b, int threads) {
  matmulPacked<T>(a, packedB<T>(b, k, n, transpose_b), out, m, k, n, transpose_a, threads);
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
template <typename T>
T logSumExp(const double* row, int64_t classes) {
  const auto top = static_cast<T>(*std::max_element(row, row + classes));
  T sum = 0;
  for (int64_t c = 0; c < classes; ++c) sum += std::exp(static_cast<T>(row[c]) - top);
  return std::log(sum) + top;
}

}  // namespace

template <typename T>
T softmaxCrossEntropy(std::span<const double> logits, std::span<const int64_t> labels, int64_t rows, int64_t classes) {
  checkLabels(labels, classes);
  T total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = logits.data() + r * classes;
    total += logSumExp<T>(row, classes) - static_cast<T>(row[labels[static_cast<size_t>(r)]]);
  }
  return total / static_cast<T>(rows);
}

template <typename T>
void softmaxCrossEntropyGrad(std::span<const double> logits, std::span<const int64_t> labels, std::span<double> out,
                             int64_t rows, int64_t classes) {
  checkLabels(labels, classes);
  const T scale = T{1} / static_cast<T>(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = logits.data() + r * classes;
    const T lse = logSumExp<T>(row, classes);
    for (int64_t c = 0; c < classes; ++c) {
      const T softmax = std::exp(static_cast<T>(row[c]) - lse);
      const T onehot = c == labels[static_cast<size_t>(r)] ? T{1} : T{0};
      out[static_cast<size_t>(r * classes + c)] = (softmax - onehot) * scale;
    }
  }
}

template <typename T>
void softmax(std::span<const double> x, std::span<double> out, int64_t outer, int64_t length, int64_t inner, bool log) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const auto at = [&](int64_t j) { return static_cast<size_t>((o * length + j) * inner + i); };
      const auto value = [&](int64_t j) { return static_cast<T>(x[at(j)]); };
      T top = value(0);
      for (int64_t j = 1; j < length; ++j) top = std::max(top, value(j));
      T sum = 0;
      for (int64_t j = 0; j < length; ++j) sum += std::exp(value(j) - top);
      const T log_sum = std::log(sum);
      for (int64_t j = 0; j < length; ++j) {
        out[at(j)] = log ? value(j) - top - log_sum : std::exp(value(j) - top) / sum;
      }
    }
  }
}

template <typename T>
void nllLoss(std::span<const double> logp, std::span<const int64_t> labels, std::span<const double> weights,
             std::span<double> out, int64_t n, int64_t c, int64_t d, int reduction, const int64_t* ignore_index) {
  T total = 0;
  T weight_sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) {
      const int64_t label = labels[static_cast<size_t>(i * d + j)];
      T loss = 0;
      if (ignore_index == nullptr || label != *ignore_index) {
        if (label < 0 || label >= c) {
          throw Error(ErrorKind::kInvalidInput, "label " + std::to_string(label) + " at position " +
                                                    std::to_string(i * d + j) + " is not a class id in [0, " +
                                                    std::to_string(c) + ")");
        }
        const T weight = weights.empty() ? T{1} : static_cast<T>(weights[static_cast<size_t>(label)]);
        loss = -static_cast<T>(logp[static_cast<size_t>((i * c + label) * d + j)]) * weight;
        weight_sum += weight;
      }
      if (reduction == 0) out[static_cast<size_t>(i * d + j)] = loss;
      total += loss;
    }
  }
  if (reduction == 1) out[0] = total;
  if (reduction == 2) out[0] = total / weight_sum;
}

template <typename T>
void batchedMatmul(std::span<const double> a, const std::vector<int64_t>& a_shape, std::span<const double> b,
                   const std::vector<int64_t>& b_shape, std::span<double> out, const std::vector<int64_t>& out_shape,
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
  // One b for the whole batch and a's matrices stacked in order (a untransposed, not
  // broadcast): one matmul of batches x m rows, the same sums (a transformer's projection of
  // [tokens, batch, features] would otherwise be one row per call, each reading all of b).
  const bool shared_b = std::all_of(sb.begin(), sb.end(), [](int64_t stride) { return stride == 0; });
  if (shared_b && !transpose_a && sa == broadcastStrides(batch, batch)) {
    matmul<T>(a, b, out, batches * m, k, n, false, transpose_b, threads);
    return;
  }
  std::vector<int64_t> index(batch.size(), 0);
  int64_t ia = 0;
  int64_t ib = 0;
  int64_t packed_ib = -1;  // the b matrix `op_b` holds: repacked only when it changes
  std::vector<T> op_b;
  for (int64_t e = 0; e < batches; ++e) {
    if (ib != packed_ib) {
      op_b = packedB<T>(b.subspan(static_cast<size_t>(ib * k * n), static_cast<size_t>(k * n)), k, n, transpose_b);
      packed_ib = ib;
    }
    matmulPacked<T>(a.subspan(static_cast<size_t>(ia * m * k), static_cast<size_t>(m * k)), op_b,
                    out.subspan(static_cast<size_t>(e * m * n), static_cast<size_t>(m * n)), m, k, n, transpose_a,
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

#define TPUSIM_KERNELS_FOR(T)                                                                                       \
  template void matmul<T>(std::span<const double>, std::span<const double>, std::span<double>, int64_t, int64_t,    \
                          int64_t, bool, bool, int);                                                                \
  template T softmaxCrossEntropy<T>(std::span<const double>, std::span<const int64_t>, int64_t, int64_t);           \
  template void softmaxCrossEntropyGrad<T>(std::span<const double>, std::span<const int64_t>, std::span<double>,    \
                                           int64_t, int64_t);                                                       \
  template void batchedMatmul<T>(std::span<const double>, const std::vector<int64_t>&, std::span<const double>,     \
                                 const std::vector<int64_t>&, std::span<double>, const std::vector<int64_t>&, bool, \
                                 bool, int);                                                                        \
  template void softmax<T>(std::span<const double>, std::span<double>, int64_t, int64_t, int64_t, bool);            \
  template void nllLoss<T>(std::span<const double>, std::span<const int64_t>, std::span<const double>,              \
                           std::span<double>, int64_t, int64_t, int64_t, int, const int64_t*);
TPUSIM_KERNELS_FOR(float)
TPUSIM_KERNELS_FOR(double)
#undef TPUSIM_KERNELS_FOR

}  // namespace tpusim::reference
