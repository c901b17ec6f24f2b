#include "reference/cuda/cuda_kernels.hpp"

#include <cmath>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "sim/common/error.hpp"

namespace tpusim::reference::cuda {

namespace {

constexpr int kThreads = 256;

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  const ErrorKind kind = status == cudaErrorMemoryAllocation ? ErrorKind::kResource : ErrorKind::kInternal;
  throw Error(kind, std::string("CUDA ") + what + ": " + cudaGetErrorString(status));
}

void check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw Error(ErrorKind::kInternal, std::string("cuBLAS ") + what + ": " + cublasGetStatusString(status));
}

unsigned blocksFor(int64_t count) {
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);  // grid-stride loops do the rest
}

__device__ float apply(Binary kind, float x, float y) {
  switch (kind) {
    case Binary::kAdd: return x + y;
    case Binary::kSub: return x - y;
    case Binary::kMul: return x * y;
    case Binary::kDiv: return x / y;
    // NaN wins, as on the CPU (reference/cpu: floatMax, floatMin).
    case Binary::kMaximum: return isnan(x) || isnan(y) ? nanf("") : fmaxf(x, y);
    case Binary::kMinimum: return isnan(x) || isnan(y) ? nanf("") : fminf(x, y);
  }
  return 0;
}

__global__ void binaryKernel(Binary kind, BroadcastIndex index, const float* a, const float* b, float* out,
                             int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    int64_t rest = i, at_a = 0, at_b = 0;
    for (int d = index.rank - 1; d >= 0; --d) {
      const int64_t coordinate = rest % index.dims[d];
      rest /= index.dims[d];
      at_a += coordinate * index.a_strides[d];
      at_b += coordinate * index.b_strides[d];
    }
    out[i] = apply(kind, a[at_a], b[at_b]);
  }
}

__global__ void scaleKernel(float factor, const float* x, float* y, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = factor * x[i];
  }
}

__global__ void reluKernel(const float* x, float* y, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = isnan(x[i]) ? x[i] : (x[i] > 0.0f ? x[i] : 0.0f);
  }
}

__global__ void reluGradKernel(const float* dy, const float* x, float* dx, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
  }
}

// One thread per output element, summing its x elements in row-major order.
__global__ void reduceSumToKernel(ReduceIndex index, const float* x, float* out, int64_t out_count) {
  int64_t x_strides[kMaxRank];
  int64_t stride = 1;
  int64_t reduced = 1;
  for (int d = index.rank - 1; d >= 0; --d) {
    x_strides[d] = stride;
    stride *= index.x_dims[d];
    if (index.out_dims[d] == 1) reduced *= index.x_dims[d];
  }
  for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < out_count;
       o += int64_t{gridDim.x} * blockDim.x) {
    int64_t base = 0, rest = o;
    for (int d = index.rank - 1; d >= 0; --d) {
      const int64_t coordinate = rest % index.out_dims[d];
      rest /= index.out_dims[d];
      base += coordinate * x_strides[d];  // out's dimension is x's or 1 (coordinate 0)
    }
    float sum = 0;
    for (int64_t r = 0; r < reduced; ++r) {
      int64_t at = base, left = r;
      for (int d = index.rank - 1; d >= 0; --d) {
        if (index.out_dims[d] != 1) continue;
        at += (left % index.x_dims[d]) * x_strides[d];
        left /= index.x_dims[d];
      }
      sum += x[at];
    }
    out[o] = sum;
  }
}

__device__ float logSumExp(const float* row, int64_t classes) {
  float top = row[0];
  for (int64_t c = 1; c < classes; ++c) top = fmaxf(top, row[c]);
  float sum = 0;
  for (int64_t c = 0; c < classes; ++c) sum += expf(row[c] - top);
  return top + logf(sum);
}

// One block: each thread sums its rows, then thread 0 adds the partial sums in
// thread order, so the result does not depend on scheduling.
__global__ void softmaxCrossEntropyKernel(const float* logits, const int64_t* labels, float* loss, int64_t rows,
                                          int64_t classes) {
  __shared__ float partial[kThreads];
  float sum = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    const float* row = logits + r * classes;
    sum += logSumExp(row, classes) - row[labels[r]];
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.x != 0) return;
  float total = 0;
  for (unsigned t = 0; t < blockDim.x; ++t) total += partial[t];
  loss[0] = total / static_cast<float>(rows);
}

__global__ void softmaxCrossEntropyGradKernel(const float* logits, const int64_t* labels, float* dlogits, int64_t rows,
                                              int64_t classes) {
  const float scale = 1.0f / static_cast<float>(rows);
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < rows; r += int64_t{gridDim.x} * blockDim.x) {
    const float* row = logits + r * classes;
    const float lse = logSumExp(row, classes);
    for (int64_t c = 0; c < classes; ++c) {
      const float onehot = c == labels[r] ? 1.0f : 0.0f;
      dlogits[r * classes + c] = (expf(row[c] - lse) - onehot) * scale;
    }
  }
}

__global__ void sgdKernel(float rate, const float* w, const float* g, float* out, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = w[i] - rate * g[i];
  }
}

}  // namespace

struct Device::State {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  std::vector<void*> buffers;
};

Device::Device() : m_state(std::make_unique<State>()) {
  check(cudaSetDevice(0), "selecting device 0");
  check(cudaStreamCreate(&m_state->stream), "creating a stream");
  check(cublasCreate(&m_state->blas), "creating a handle");
  check(cublasSetStream(m_state->blas, m_state->stream), "setting the stream");
  // Plain f32 SGEMM: no TF32 tensor-op rounding of the operands.
  check(cublasSetMathMode(m_state->blas, CUBLAS_PEDANTIC_MATH), "setting the math mode");
  check(cudaEventCreate(&m_state->start), "creating an event");
  check(cudaEventCreate(&m_state->stop), "creating an event");
}

Device::~Device() {
  for (void* buffer : m_state->buffers) cudaFree(buffer);
  if (m_state->start) cudaEventDestroy(m_state->start);
  if (m_state->stop) cudaEventDestroy(m_state->stop);
  if (m_state->blas) cublasDestroy(m_state->blas);
  if (m_state->stream) cudaStreamDestroy(m_state->stream);
}

float* Device::floats(size_t count) {
  void* buffer = nullptr;
  check(cudaMalloc(&buffer, (count > 0 ? count : 1) * sizeof(float)), "allocating device memory");
  m_state->buffers.push_back(buffer);
  return static_cast<float*>(buffer);
}

int64_t* Device::ints(size_t count) {
  void* buffer = nullptr;
  check(cudaMalloc(&buffer, (count > 0 ? count : 1) * sizeof(int64_t)), "allocating device memory");
  m_state->buffers.push_back(buffer);
  return static_cast<int64_t*>(buffer);
}

void Device::upload(float* device, const float* host, size_t count) {
  check(cudaMemcpy(device, host, count * sizeof(float), cudaMemcpyHostToDevice), "copying to the device");
}

void Device::upload(int64_t* device, const int64_t* host, size_t count) {
  check(cudaMemcpy(device, host, count * sizeof(int64_t), cudaMemcpyHostToDevice), "copying to the device");
}

void Device::download(float* host, const float* device, size_t count) {
  check(cudaStreamSynchronize(m_state->stream), "running the step");
  check(cudaMemcpy(host, device, count * sizeof(float), cudaMemcpyDeviceToHost), "copying from the device");
}

void Device::download(int64_t* host, const int64_t* device, size_t count) {
  check(cudaStreamSynchronize(m_state->stream), "running the step");
  check(cudaMemcpy(host, device, count * sizeof(int64_t), cudaMemcpyDeviceToHost), "copying from the device");
}

void Device::startTimer() {
  check(cudaEventRecord(m_state->start, m_state->stream), "recording an event");
}

double Device::stopTimer() {
  check(cudaGetLastError(), "launching a kernel");
  check(cudaEventRecord(m_state->stop, m_state->stream), "recording an event");
  check(cudaEventSynchronize(m_state->stop), "running an op");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, m_state->start, m_state->stop), "reading the events");
  return static_cast<double>(ms) * 1e-3;
}

void Device::gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t a_stride,
                  const float* b, int64_t b_stride, float* c, int64_t batch) {
  // cuBLAS is column-major: the row-major C = op(A) op(B) is the column-major
  // C^T = op(B)^T op(A)^T, and a row-major matrix read column-major is its transpose.
  const float alpha = 1.0f, beta = 0.0f;
  const int lda = static_cast<int>(transpose_a ? m : k);
  const int ldb = static_cast<int>(transpose_b ? k : n);
  check(cublasSgemmStridedBatched(m_state->blas, transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                  transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                                  static_cast<int>(k), &alpha, b, ldb, b_stride, a, lda, a_stride, &beta, c,
                                  static_cast<int>(n), m * n, static_cast<int>(batch)),
        "SGEMM");
}

void Device::binary(Binary kind, const BroadcastIndex& index, const float* a, const float* b, float* out,
                    int64_t count) {
  binaryKernel<<<blocksFor(count), kThreads, 0, m_state->stream>>>(kind, index, a, b, out, count);
}

void Device::scale(float factor, const float* x, float* y, int64_t count) {
  scaleKernel<<<blocksFor(count), kThreads, 0, m_state->stream>>>(factor, x, y, count);
}

void Device::relu(const float* x, float* y, int64_t count) {
  reluKernel<<<blocksFor(count), kThreads, 0, m_state->stream>>>(x, y, count);
}

void Device::reluGrad(const float* dy, const float* x, float* dx, int64_t count) {
  reluGradKernel<<<blocksFor(count), kThreads, 0, m_state->stream>>>(dy, x, dx, count);
}

void Device::reduceSumTo(const ReduceIndex& index, const float* x, float* out, int64_t out_count) {
  reduceSumToKernel<<<blocksFor(out_count), kThreads, 0, m_state->stream>>>(index, x, out, out_count);
}

void Device::softmaxCrossEntropy(const float* logits, const int64_t* labels, float* loss, int64_t rows,
                                 int64_t classes) {
  softmaxCrossEntropyKernel<<<1, kThreads, 0, m_state->stream>>>(logits, labels, loss, rows, classes);
}

void Device::softmaxCrossEntropyGrad(const float* logits, const int64_t* labels, float* dlogits, int64_t rows,
                                     int64_t classes) {
  softmaxCrossEntropyGradKernel<<<blocksFor(rows), kThreads, 0, m_state->stream>>>(logits, labels, dlogits, rows,
                                                                                   classes);
}

void Device::sgdUpdate(float rate, const float* w, const float* g, float* out, int64_t count) {
  sgdKernel<<<blocksFor(count), kThreads, 0, m_state->stream>>>(rate, w, g, out, count);
}

}  // namespace tpusim::reference::cuda
