// The device side of the CUDA executor (cuda_executor.hpp): device 0 with one
// stream, device buffers, GEMMs through cuBLAS, the project's own kernels for
// the elementwise, loss and SGD ops, and CUDA-event timing. Plain C++17 without
// CUDA types, so that the executor's C++20 host code can call it. Arithmetic is
// f32 throughout (cuBLAS SGEMM with f32 accumulation, no TF32). Every call
// throws Error on a CUDA or cuBLAS failure (kResource when memory runs out).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace tpusim::reference::cuda {

inline constexpr int kMaxRank = 8;

// An elementwise binary op at its output's shape: each operand's element strides,
// 0 along a dimension it is broadcast over.
struct BroadcastIndex {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t a_strides[kMaxRank] = {};
  int64_t b_strides[kMaxRank] = {};
};

// ReduceSumTo: x's shape, and the output's right-aligned to it (leading 1s added).
// x is summed over every dimension where the output has 1 and x more.
struct ReduceIndex {
  int rank = 0;
  int64_t x_dims[kMaxRank] = {};
  int64_t out_dims[kMaxRank] = {};
};

enum class Binary { kAdd, kSub, kMul, kDiv, kMaximum, kMinimum };

class Device {
 public:
  Device();  // device 0, a stream, a cuBLAS handle and two events
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // Device memory, freed with the Device.
  float* floats(size_t count);
  int64_t* ints(size_t count);
  void upload(float* device, const float* host, size_t count);
  void upload(int64_t* device, const int64_t* host, size_t count);
  void download(float* host, const float* device, size_t count);
  void download(int64_t* host, const int64_t* device, size_t count);

  // Events on the stream around the work issued between the two calls; stopTimer
  // waits for it and returns the seconds between the events.
  void startTimer();
  double stopTimer();

  // Row-major c[batch][m x n] = op(a) x op(b), op a transpose where asked; an
  // operand's batch stride 0 repeats one matrix over the batch.
  void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t a_stride,
            const float* b, int64_t b_stride, float* c, int64_t batch);
  void binary(Binary kind, const BroadcastIndex& index, const float* a, const float* b, float* out, int64_t count);
  void scale(float factor, const float* x, float* y, int64_t count);
  void relu(const float* x, float* y, int64_t count);  // NaN stays NaN, as on the CPU
  void reluGrad(const float* dy, const float* x, float* dx, int64_t count);
  void reduceSumTo(const ReduceIndex& index, const float* x, float* out, int64_t out_count);
  // loss[0] = mean over rows of logsumexp(row) - row[label]; labels in [0, classes).
  void softmaxCrossEntropy(const float* logits, const int64_t* labels, float* loss, int64_t rows, int64_t classes);
  // dlogits = (softmax(row) - onehot(label)) / rows.
  void softmaxCrossEntropyGrad(const float* logits, const int64_t* labels, float* dlogits, int64_t rows,
                               int64_t classes);
  // out = w - rate * g.
  void sgdUpdate(float rate, const float* w, const float* g, float* out, int64_t count);

 private:
  struct State;
  std::unique_ptr<State> m_state;
};

}  // namespace tpusim::reference::cuda
