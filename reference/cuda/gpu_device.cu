// The CUDA executor's device on an NVIDIA GPU: one stream, cuBLAS for GEMMs (int8 ones too), cuDNN
// for floating convolutions and the forward poolings it can state (cudnn_pool.hpp), and the project's kernels
// (reference/cuda/kernels) launched as grid-stride loops; a group of GPUs all-reduces with NCCL. Built with
// --fmad=false (reference/CMakeLists.txt): no multiply-add is fused that the CPU executor rounds twice.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include "reference/cuda/cudnn_pool.hpp"
#include "reference/cuda/functor_device.hpp"
#include "sim/common/error.hpp"

namespace tpusim::reference::cuda {

namespace {

constexpr int kThreads = 256;

// The largest share of the device's free memory a convolution's workspace may take when its
// algorithm is chosen: the rest is left for the step's tensors and the other plans.
constexpr size_t kWorkspaceShareDivisor = 2;  // half

// A float reduction with fewer outputs than this, each of more than kReduceChunk terms, is split
// into chunks of kReduceChunk terms, a thread each: a batch norm's mean over N x H x W into C
// outputs would otherwise be C threads adding tens of thousands of terms each.
constexpr int64_t kReduceParallelOutputs = 16384;
constexpr int64_t kReduceChunk = 256;

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  const ErrorKind kind = status == cudaErrorMemoryAllocation ? ErrorKind::kResource : ErrorKind::kInternal;
  throw Error(kind, std::string("CUDA ") + what + ": " + cudaGetErrorString(status));
}

void check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const ErrorKind kind = status == CUBLAS_STATUS_ALLOC_FAILED ? ErrorKind::kResource : ErrorKind::kInternal;
  throw Error(kind, std::string("cuBLAS ") + what + ": " + cublasGetStatusString(status));
}

void check(ncclResult_t status, const char* what) {
  if (status == ncclSuccess) return;
  throw Error(ErrorKind::kInternal, std::string("NCCL ") + what + ": " + ncclGetErrorString(status));
}

void check(cudnnStatus_t status, const char* what) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  const ErrorKind kind = status == CUDNN_STATUS_ALLOC_FAILED ? ErrorKind::kResource : ErrorKind::kInternal;
  throw Error(kind, std::string("cuDNN ") + what + ": " + cudnnGetErrorString(status));
}

unsigned blocksFor(int64_t count) {
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);  // grid-stride loops do the rest
}

template <typename Functor>
__global__ void forEach(int64_t count, Functor functor) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    functor(i);
  }
}

cudaDataType_t blasType(Elem elem) {
  return elem == Elem::kBF16 ? CUDA_R_16BF : elem == Elem::kF16 ? CUDA_R_16F : CUDA_R_32F;
}

cudnnDataType_t dnnType(Elem elem) {
  return elem == Elem::kBF16 ? CUDNN_DATA_BFLOAT16 : elem == Elem::kF16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
}

// One convolution's cuDNN descriptors and algorithm (its workspace is the device's, shared:
// the ops run one at a time on one stream).
struct ConvPlan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  int algorithm = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace_bytes = 0;
};

// One forward pooling's cuDNN descriptors. The N x C planes are one dimension of x and y, [planes,
// 1, spatial...]: each plane pools alone, and PoolArgs counts them so.
struct PoolPlan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnPoolingDescriptor_t pool = nullptr;
};

// An int8 GEMM's staging buffers for cuBLAS (CUDA_R_8I operands, CUDA_R_32I sums): the executor
// holds integers as int64, so each run packs the operands into these and widens the sums back.
struct Int8GemmPlan {
  int8_t* a = nullptr;
  int8_t* b = nullptr;
  int32_t* c = nullptr;
  int64_t a_count = 0, b_count = 0, c_count = 0;
};

// cuDNN's names of its algorithms (cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t), by pass and value.
std::string convAlgorithmName(ConvPass pass, int algorithm) {
  static const char* const forward[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
                                        "WINOGRAD",      "WINOGRAD_NONFUSED"};
  static const char* const data[] = {"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  static const char* const filter[] = {"ALGO_0",    "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED",
                                       "FFT_TILING"};
  const auto named = [algorithm](const char* const* names, int count) {
    return algorithm >= 0 && algorithm < count ? std::string(names[algorithm])
                                               : "algorithm " + std::to_string(algorithm);
  };
  switch (pass) {
    case ConvPass::kForward: return "cudnnConvolutionForward " + named(forward, 8);
    case ConvPass::kGradInput: return "cudnnConvolutionBackwardData " + named(data, 6);
    case ConvPass::kGradWeight: return "cudnnConvolutionBackwardFilter " + named(filter, 7);
  }
  return "";
}

const char* mathName(cudnnMathType_t math) {
  switch (math) {
    case CUDNN_FMA_MATH: return "FMA math";
    case CUDNN_TENSOR_OP_MATH: return "tensor-op math";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "tensor-op math with conversion";
    default: return "default math";
  }
}

// An algorithm to try, with the math type and workspace cuDNN's ranking gave it.
struct ConvCandidate {
  int algorithm = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace_bytes = 0;
};

// cuDNN's ranked algorithms that run, are deterministic and, for f32, are not tensor-op ones
// (which would round the operands to TF32): as the CPU executor's f32 arithmetic. Best first.
template <typename Perf>
std::vector<ConvCandidate> rankedCandidates(const Perf* results, int count, bool f32) {
  std::vector<ConvCandidate> candidates;
  for (int i = 0; i < count; ++i) {
    const Perf& perf = results[i];
    if (perf.status != CUDNN_STATUS_SUCCESS || perf.determinism != CUDNN_DETERMINISTIC) continue;
    if (f32 && (perf.mathType == CUDNN_TENSOR_OP_MATH || perf.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
      continue;
    candidates.push_back({static_cast<int>(perf.algo), perf.mathType, perf.memory});
  }
  return candidates;
}

}  // namespace

class GpuDevice : public FunctorDevice<GpuDevice> {
 public:
  explicit GpuDevice(int index) : m_index(index) {
    select();
    // The context first, then the baseline: the handles' and the libraries' memory counts in the peak.
    check(cudaFree(nullptr), "starting");
    m_baseline = usedBytes();
    check(cudaStreamCreate(&m_stream), "creating a stream");
    check(cublasCreate(&m_blas), "creating a handle");
    check(cublasSetStream(m_blas, m_stream), "setting the stream");
    check(cudnnCreate(&m_dnn), "creating a handle");
    check(cudnnSetStream(m_dnn, m_stream), "setting the stream");
    check(cudaEventCreate(&m_start), "creating an event");
    check(cudaEventCreate(&m_stop), "creating an event");
    check(cudaDeviceSynchronize(), "starting");
  }

  ~GpuDevice() override {
    cudaSetDevice(m_index);
    for (ConvPlan& plan : m_plans) {
      if (plan.x) cudnnDestroyTensorDescriptor(plan.x);
      if (plan.y) cudnnDestroyTensorDescriptor(plan.y);
      if (plan.w) cudnnDestroyFilterDescriptor(plan.w);
      if (plan.conv) cudnnDestroyConvolutionDescriptor(plan.conv);
    }
    for (PoolPlan& plan : m_pool_plans) {
      if (plan.x) cudnnDestroyTensorDescriptor(plan.x);
      if (plan.y) cudnnDestroyTensorDescriptor(plan.y);
      if (plan.pool) cudnnDestroyPoolingDescriptor(plan.pool);
    }
    for (Int8GemmPlan& plan : m_gemm_plans) freeStaging(plan);
    for (void* buffer : m_buffers) cudaFree(buffer);
    if (m_workspace) cudaFree(m_workspace);
    if (m_start) cudaEventDestroy(m_start);
    if (m_stop) cudaEventDestroy(m_stop);
    if (m_dnn) cudnnDestroy(m_dnn);
    if (m_blas) cublasDestroy(m_blas);
    if (m_stream) cudaStreamDestroy(m_stream);
  }

  void* allocate(size_t bytes) override {
    select();
    void* buffer = nullptr;
    check(cudaMalloc(&buffer, bytes > 0 ? bytes : 1), "allocating device memory");
    m_buffers.push_back(buffer);
    check(cudaMemset(buffer, 0, bytes > 0 ? bytes : 1), "zeroing device memory");
    return buffer;
  }

  void upload(void* device, const void* host, size_t bytes) override {
    select();
    check(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), "copying to the device");
  }

  void download(void* host, const void* device, size_t bytes) override {
    select();
    check(cudaStreamSynchronize(m_stream), "running the step");
    check(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost), "copying from the device");
  }

  void zero(void* device, size_t bytes) override {
    select();
    check(cudaMemsetAsync(device, 0, bytes, m_stream), "zeroing device memory");
  }

  void startTimer() override {
    select();
    check(cudaEventRecord(m_start, m_stream), "recording an event");
  }

  double stopTimer() override {
    select();
    check(cudaEventRecord(m_stop, m_stream), "recording an event");
    check(cudaEventSynchronize(m_stop), "running an op");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, m_start, m_stop), "reading the events");
    const uint64_t used = usedBytes();
    if (used > m_baseline && used - m_baseline > m_peak) m_peak = used - m_baseline;
    return static_cast<double>(ms) * 1e-3;
  }

  uint64_t peakBytes() const override { return m_peak; }

  int index() const { return m_index; }
  cudaStream_t stream() const { return m_stream; }

  int planGemm(const GemmArgs& g) override {
    if (!multipliesInt8(g.a) || g.batch * g.m * g.n == 0 || g.k == 0) return -1;
    select();
    Int8GemmPlan plan;
    plan.a_count = (g.a_stride == 0 ? 1 : g.batch) * g.m * g.k;
    plan.b_count = (g.b_stride == 0 ? 1 : g.batch) * g.k * g.n;
    plan.c_count = g.batch * g.m * g.n;
    m_gemm_plans.push_back(plan);  // freed with the device, whatever fails below
    Int8GemmPlan& held = m_gemm_plans.back();
    check(cudaMalloc(&held.a, static_cast<size_t>(plan.a_count)), "allocating an int8 GEMM's operands");
    check(cudaMalloc(&held.b, static_cast<size_t>(plan.b_count)), "allocating an int8 GEMM's operands");
    check(cudaMalloc(&held.c, static_cast<size_t>(plan.c_count) * sizeof(int32_t)), "allocating an int8 GEMM's sums");
    // Once now, on the staging buffers, before the timed runs. Where this cuBLAS declines the
    // shapes, the project's kernel multiplies instead (its sums are the same: both are exact).
    const cublasStatus_t status = int8Blas(g, held);
    if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE) {
      freeStaging(held);
      m_gemm_plans.pop_back();
      return -1;
    }
    check(status, "planning an int8 GEMM");
    return static_cast<int>(m_gemm_plans.size() - 1);
  }

  void gemm(const GemmArgs& g) override {
    select();
    // cuBLAS is column-major: the row-major C = op(A) op(B) is the column-major
    // C^T = op(B)^T op(A)^T, and a row-major matrix read column-major is its transpose.
    if (g.batch * g.m * g.n == 0) return;
    if (g.k == 0) {  // an empty sum: zeros (cuBLAS refuses a leading dimension of 0)
      check(cudaMemsetAsync(g.c.data, 0,
                            static_cast<size_t>(g.batch * g.m * g.n) * static_cast<size_t>(elementBytes(g.c.elem)),
                            m_stream),
            "zeroing a GEMM's output");
      return;
    }
    if (multipliesInt8(g.a)) {
      if (g.plan < 0) {
        int8Gemm(g);
        return;
      }
      const Int8GemmPlan& plan = m_gemm_plans.at(static_cast<size_t>(g.plan));
      run(plan.a_count, PackInt8Kernel{g.a, plan.a});
      run(plan.b_count, PackInt8Kernel{g.b, plan.b});
      check(int8Blas(g, plan), "int8 GemmEx");
      run(plan.c_count, WidenInt32Kernel{plan.c, g.c});
      return;
    }
    const float alpha = 1.0f, beta = 0.0f;
    const int lda = static_cast<int>(g.transpose_a ? g.m : g.k);
    const int ldb = static_cast<int>(g.transpose_b ? g.k : g.n);
    const cublasOperation_t op_a = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_b = g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const auto m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
    if (g.c.elem == Elem::kF32) {
      // Plain f32 SGEMM: no TF32 rounding of the operands.
      check(cublasSetMathMode(m_blas, CUBLAS_PEDANTIC_MATH), "setting the math mode");
      check(cublasSgemmStridedBatched(m_blas, op_b, op_a, n, m, k, &alpha, static_cast<const float*>(g.b.data), ldb,
                                      g.b_stride, static_cast<const float*>(g.a.data), lda, g.a_stride, &beta,
                                      static_cast<float*>(g.c.data), n, g.m * g.n, static_cast<int>(g.batch)),
            "SGEMM");
      return;
    }
    // bf16 or f16 operands on the tensor cores, f32 accumulation (split-K partial sums too: no
    // reduction in the output's precision), the result rounded to the dtype.
    check(cublasSetMathMode(m_blas, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                                              CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
          "setting the math mode");
    const cudaDataType_t type = blasType(g.c.elem);
    check(cublasGemmStridedBatchedEx(m_blas, op_b, op_a, n, m, k, &alpha, g.b.data, type, ldb, g.b_stride, g.a.data,
                                     type, lda, g.a_stride, &beta, g.c.data, type, n, g.m * g.n,
                                     static_cast<int>(g.batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "GemmEx");
  }

  int planConv(const ConvArgs& c) override {
    select();
    ConvPlan plan;
    const cudnnDataType_t type = dnnType(c.x.elem);
    const auto dim = [](const int64_t* dims, int i) { return static_cast<int>(dims[i]); };
    check(cudnnCreateTensorDescriptor(&plan.x), "creating a descriptor");
    check(cudnnCreateTensorDescriptor(&plan.y), "creating a descriptor");
    check(cudnnCreateFilterDescriptor(&plan.w), "creating a descriptor");
    check(cudnnCreateConvolutionDescriptor(&plan.conv), "creating a descriptor");
    m_plans.push_back(plan);  // destroyed with the device, whatever fails below
    check(cudnnSetTensor4dDescriptor(plan.x, CUDNN_TENSOR_NCHW, type, dim(c.x_dims, 0), dim(c.x_dims, 1),
                                     dim(c.x_dims, 2), dim(c.x_dims, 3)),
          "describing x");
    check(cudnnSetTensor4dDescriptor(plan.y, CUDNN_TENSOR_NCHW, type, dim(c.y_dims, 0), dim(c.y_dims, 1),
                                     dim(c.y_dims, 2), dim(c.y_dims, 3)),
          "describing y");
    check(cudnnSetFilter4dDescriptor(plan.w, type, CUDNN_TENSOR_NCHW, dim(c.w_dims, 0), dim(c.w_dims, 1),
                                     dim(c.w_dims, 2), dim(c.w_dims, 3)),
          "describing w");
    // Symmetric padding (the executor refuses other): pads are top, left, bottom, right.
    check(cudnnSetConvolution2dDescriptor(plan.conv, static_cast<int>(c.pads[0]), static_cast<int>(c.pads[1]),
                                          static_cast<int>(c.strides[0]), static_cast<int>(c.strides[1]),
                                          static_cast<int>(c.dilations[0]), static_cast<int>(c.dilations[1]),
                                          CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
          "describing the convolution");
    check(cudnnSetConvolutionGroupCount(plan.conv, static_cast<int>(c.group)), "setting the groups");
    const bool f32 = c.x.elem == Elem::kF32;
    // f32: FMA math only (DEFAULT_MATH lets Ampere and later use TF32); bf16 and f16: the tensor cores.
    check(cudnnSetConvolutionMathType(plan.conv, f32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH), "setting the math type");
    constexpr int kAsk = 16;
    int found = 0;
    std::vector<ConvCandidate> candidates;
    // Last, if cuDNN ranks none that will do: the pass's implicit-GEMM algorithm, deterministic.
    ConvCandidate fallback{0, f32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH, 0};
    switch (c.pass) {
      case ConvPass::kForward: {
        cudnnConvolutionFwdAlgoPerf_t results[kAsk];
        check(cudnnGetConvolutionForwardAlgorithm_v7(m_dnn, plan.x, plan.w, plan.conv, plan.y, kAsk, &found, results),
              "ranking forward algorithms");
        candidates = rankedCandidates(results, found, f32);
        fallback.algorithm = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
        break;
      }
      case ConvPass::kGradInput: {
        cudnnConvolutionBwdDataAlgoPerf_t results[kAsk];
        check(cudnnGetConvolutionBackwardDataAlgorithm_v7(m_dnn, plan.w, plan.y, plan.conv, plan.x, kAsk, &found,
                                                          results),
              "ranking backward-data algorithms");
        candidates = rankedCandidates(results, found, f32);
        fallback.algorithm = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
        break;
      }
      case ConvPass::kGradWeight: {
        cudnnConvolutionBwdFilterAlgoPerf_t results[kAsk];
        check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(m_dnn, plan.x, plan.y, plan.conv, plan.w, kAsk, &found,
                                                            results),
              "ranking backward-filter algorithms");
        candidates = rankedCandidates(results, found, f32);
        fallback.algorithm = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
        break;
      }
    }
    candidates.push_back(fallback);
    // The first candidate whose workspace, asked again under the math type it will run with (FMA
    // for f32 whatever the ranking said), is known and takes at most kWorkspaceShareDivisor's share
    // of the free memory.
    size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "reading the free memory");
    bool chosen = false;
    for (const ConvCandidate& candidate : candidates) {
      if (cudnnSetConvolutionMathType(plan.conv, f32 ? CUDNN_FMA_MATH : candidate.math) != CUDNN_STATUS_SUCCESS)
        continue;
      size_t bytes = 0;
      if (convWorkspaceBytes(plan, c.pass, candidate.algorithm, &bytes) != CUDNN_STATUS_SUCCESS) continue;
      bytes = std::max(bytes, candidate.workspace_bytes);
      if (bytes > free / kWorkspaceShareDivisor) continue;
      plan.algorithm = candidate.algorithm;
      plan.math = f32 ? CUDNN_FMA_MATH : candidate.math;
      plan.workspace_bytes = bytes;
      chosen = true;
      break;
    }
    if (!chosen) {
      throw Error(ErrorKind::kUnsupported, std::string("cuDNN has no deterministic ") + (f32 ? "non-TF32 " : "") +
                                               "algorithm for this convolution; use --backend cpu");
    }
    if (plan.workspace_bytes > m_workspace_bytes) {  // the shared workspace grows to the largest plan's
      if (m_workspace) check(cudaFree(m_workspace), "freeing the convolution workspace");
      m_workspace = nullptr;
      m_workspace_bytes = 0;
      check(cudaMalloc(&m_workspace, plan.workspace_bytes), "allocating the convolution workspace");
      m_workspace_bytes = plan.workspace_bytes;
    }
    m_plans.back() = plan;
    return static_cast<int>(m_plans.size() - 1);
  }

  void conv(const ConvArgs& c) override {
    // cuDNN takes int8 convolutions in NHWC layouts, and the executor holds NCHW: the project's kernel.
    if (multipliesInt8(c.x)) {
      int8Conv(c);
      return;
    }
    select();
    const ConvPlan& plan = m_plans.at(static_cast<size_t>(c.plan));
    const float alpha = 1.0f, beta = 0.0f;
    switch (c.pass) {
      case ConvPass::kForward:
        check(cudnnConvolutionForward(m_dnn, &alpha, plan.x, c.x.data, plan.w, c.w.data, plan.conv,
                                      static_cast<cudnnConvolutionFwdAlgo_t>(plan.algorithm), m_workspace,
                                      plan.workspace_bytes, &beta, plan.y, c.y.data),
              "convolution forward");
        return;
      case ConvPass::kGradInput:
        check(cudnnConvolutionBackwardData(m_dnn, &alpha, plan.w, c.w.data, plan.y, c.y.data, plan.conv,
                                           static_cast<cudnnConvolutionBwdDataAlgo_t>(plan.algorithm), m_workspace,
                                           plan.workspace_bytes, &beta, plan.x, c.x.data),
              "convolution backward data");
        return;
      case ConvPass::kGradWeight:
        check(cudnnConvolutionBackwardFilter(m_dnn, &alpha, plan.x, c.x.data, plan.y, c.y.data, plan.conv,
                                             static_cast<cudnnConvolutionBwdFilterAlgo_t>(plan.algorithm), m_workspace,
                                             plan.workspace_bytes, &beta, plan.w, c.w.data),
              "convolution backward filter");
        return;
    }
  }

  std::string gemmKernel(const GemmArgs& g) const override {
    if (g.batch * g.m * g.n == 0) return "none (an empty output)";
    if (g.k == 0) return "cudaMemsetAsync (an empty sum: zeros)";
    if (multipliesInt8(g.a)) {
      return g.plan >= 0 ? "cuBLAS cublasGemmStridedBatchedEx (int8 into int32, COMPUTE_32I), with tpusim pack and "
                           "widen kernels"
                         : std::string(kInt8GemmKernel) + " (cuBLAS declined the shapes)";
    }
    return g.c.elem == Elem::kF32 ? "cuBLAS cublasSgemmStridedBatched (pedantic math: no TF32)"
                                  : "cuBLAS cublasGemmStridedBatchedEx (tensor cores, COMPUTE_32F)";
  }

  std::string convKernel(const ConvArgs& c) const override {
    if (multipliesInt8(c.x)) return kInt8ConvKernel;
    const ConvPlan& plan = m_plans.at(static_cast<size_t>(c.plan));
    return "cuDNN " + convAlgorithmName(c.pass, plan.algorithm) + ", " + mathName(plan.math);
  }

  std::string poolKernel(const PoolArgs& p) const override {
    return p.plan >= 0 ? "cuDNN cudnnPoolingForward" : kPoolKernel;
  }

  int64_t reduceChunk(int64_t outputs, int64_t terms) const override {
    return outputs < kReduceParallelOutputs && terms > kReduceChunk ? kReduceChunk : 0;
  }

  int planPool(const PoolArgs& p) override {
    if (!cudnnPools(p)) return -1;
    select();
    PoolPlan plan;
    check(cudnnCreateTensorDescriptor(&plan.x), "creating a descriptor");
    check(cudnnCreateTensorDescriptor(&plan.y), "creating a descriptor");
    check(cudnnCreatePoolingDescriptor(&plan.pool), "creating a descriptor");
    m_pool_plans.push_back(plan);  // destroyed with the device, whatever fails below
    const int dims = p.rank + 2;
    int x_dims[kMaxRank] = {static_cast<int>(p.planes), 1}, y_dims[kMaxRank] = {static_cast<int>(p.planes), 1};
    int window[kMaxPoolRank] = {}, pads[kMaxPoolRank] = {}, strides[kMaxPoolRank] = {};
    for (int d = 0; d < p.rank; ++d) {
      x_dims[d + 2] = static_cast<int>(p.x_spatial[d]);
      y_dims[d + 2] = static_cast<int>(p.y_spatial[d]);
      window[d] = static_cast<int>(p.kernel[d]);
      pads[d] = static_cast<int>(p.pads[d]);
      strides[d] = static_cast<int>(p.strides[d]);
    }
    // Where this cuDNN declines the descriptors or the call (a dtype or shape it does not pool),
    // the project's kernel pools instead.
    const auto declined = [](cudnnStatus_t status) {
      return status == CUDNN_STATUS_BAD_PARAM || status == CUDNN_STATUS_NOT_SUPPORTED;
    };
    const cudnnDataType_t type = dnnType(p.x.elem);
    cudnnStatus_t status = cudnnSetTensorNdDescriptorEx(plan.x, CUDNN_TENSOR_NCHW, type, dims, x_dims);
    if (status == CUDNN_STATUS_SUCCESS)
      status = cudnnSetTensorNdDescriptorEx(plan.y, CUDNN_TENSOR_NCHW, type, dims, y_dims);
    // The average counts the padding or not as the op says; a NaN in a window is the maximum (the
    // CPU executor's first-maximum scan keeps a NaN only where it comes first).
    const cudnnPoolingMode_t mode = p.max                 ? CUDNN_POOLING_MAX
                                    : p.count_include_pad ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                          : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    if (status == CUDNN_STATUS_SUCCESS)
      status = cudnnSetPoolingNdDescriptor(plan.pool, mode, CUDNN_PROPAGATE_NAN, p.rank, window, pads, strides);
    int out[kMaxRank] = {};
    if (status == CUDNN_STATUS_SUCCESS) status = cudnnGetPoolingNdForwardOutputDim(plan.pool, plan.x, dims, out);
    if (status == CUDNN_STATUS_SUCCESS && !std::equal(out, out + dims, y_dims)) return -1;
    // Once now, before the timed runs (each run writes y again).
    const float alpha = 1.0f, beta = 0.0f;
    if (status == CUDNN_STATUS_SUCCESS)
      status = cudnnPoolingForward(m_dnn, plan.pool, &alpha, plan.x, p.x.data, &beta, plan.y, p.y.data);
    if (declined(status)) return -1;
    check(status, "planning a pooling");
    return static_cast<int>(m_pool_plans.size() - 1);
  }

  void pool(const PoolArgs& p) override {
    if (p.plan < 0) {
      FunctorDevice::pool(p);
      return;
    }
    select();
    const PoolPlan& plan = m_pool_plans.at(static_cast<size_t>(p.plan));
    const float alpha = 1.0f, beta = 0.0f;
    check(cudnnPoolingForward(m_dnn, plan.pool, &alpha, plan.x, p.x.data, &beta, plan.y, p.y.data), "pooling forward");
  }

  template <typename Functor>
  void run(int64_t count, const Functor& functor) {
    select();
    if (count <= 0) return;
    (void)cudaGetLastError();  // an error a library left behind is not this launch's
    forEach<<<blocksFor(count), kThreads, 0, m_stream>>>(count, functor);
    check(cudaGetLastError(), "launching a kernel");
  }

 private:
  // cuBLAS's int8 GEMM of `g` on `plan`'s staging buffers (row-major as column-major: see gemm), its
  // int32 sums exact. cuBLAS's status is returned, not checked: planGemm tells a decline from a fault.
  cublasStatus_t int8Blas(const GemmArgs& g, const Int8GemmPlan& plan) {
    check(cublasSetMathMode(m_blas, CUBLAS_DEFAULT_MATH), "setting the math mode");
    const int32_t alpha = 1, beta = 0;
    const int lda = static_cast<int>(g.transpose_a ? g.m : g.k);
    const int ldb = static_cast<int>(g.transpose_b ? g.k : g.n);
    return cublasGemmStridedBatchedEx(
        m_blas, g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N,
        static_cast<int>(g.n), static_cast<int>(g.m), static_cast<int>(g.k), &alpha, plan.b, CUDA_R_8I, ldb, g.b_stride,
        plan.a, CUDA_R_8I, lda, g.a_stride, &beta, plan.c, CUDA_R_32I, static_cast<int>(g.n), g.m * g.n,
        static_cast<int>(g.batch), CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT);
  }

  static void freeStaging(Int8GemmPlan& plan) {
    for (void* buffer : {static_cast<void*>(plan.a), static_cast<void*>(plan.b), static_cast<void*>(plan.c)}) {
      if (buffer) cudaFree(buffer);
    }
    plan = {};
  }

  // Every call works on this device: the executor drives a group of them from one thread.
  void select() const { check(cudaSetDevice(m_index), "selecting a device"); }

  // The workspace `algorithm` of `pass` needs under the descriptor's math type.
  cudnnStatus_t convWorkspaceBytes(const ConvPlan& plan, ConvPass pass, int algorithm, size_t* bytes) const {
    switch (pass) {
      case ConvPass::kForward:
        return cudnnGetConvolutionForwardWorkspaceSize(m_dnn, plan.x, plan.w, plan.conv, plan.y,
                                                       static_cast<cudnnConvolutionFwdAlgo_t>(algorithm), bytes);
      case ConvPass::kGradInput:
        return cudnnGetConvolutionBackwardDataWorkspaceSize(
            m_dnn, plan.w, plan.y, plan.conv, plan.x, static_cast<cudnnConvolutionBwdDataAlgo_t>(algorithm), bytes);
      case ConvPass::kGradWeight:
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(
            m_dnn, plan.x, plan.y, plan.conv, plan.w, static_cast<cudnnConvolutionBwdFilterAlgo_t>(algorithm), bytes);
    }
    return CUDNN_STATUS_BAD_PARAM;
  }

  static uint64_t usedBytes() {
    size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "reading the memory in use");
    return total - free;
  }

  int m_index = 0;
  cudaStream_t m_stream = nullptr;
  cublasHandle_t m_blas = nullptr;
  cudnnHandle_t m_dnn = nullptr;
  cudaEvent_t m_start = nullptr, m_stop = nullptr;
  std::vector<void*> m_buffers;
  std::vector<ConvPlan> m_plans;
  std::vector<PoolPlan> m_pool_plans;
  std::vector<Int8GemmPlan> m_gemm_plans;
  void* m_workspace = nullptr;
  size_t m_workspace_bytes = 0;
  uint64_t m_baseline = 0, m_peak = 0;
};

ncclDataType_t ncclType(Elem elem) {
  return elem == Elem::kBF16 ? ncclBfloat16 : elem == Elem::kF16 ? ncclFloat16 : ncclFloat32;
}

// One NCCL communicator per GPU of the group, made together in this process (ncclCommInitAll).
class NcclCollective : public Collective {
 public:
  explicit NcclCollective(std::vector<GpuDevice*> devices) : m_devices(std::move(devices)) {
    std::vector<int> indices;
    for (const GpuDevice* device : m_devices) indices.push_back(device->index());
    m_comms.resize(m_devices.size());
    check(ncclCommInitAll(m_comms.data(), static_cast<int>(m_comms.size()), indices.data()), "creating communicators");
  }

  ~NcclCollective() override {
    for (ncclComm_t comm : m_comms) {
      if (comm) ncclCommDestroy(comm);
    }
  }

  void allReduceSum(const std::vector<Ref>& inputs, const std::vector<Ref>& outputs, int64_t count) override {
    check(ncclGroupStart(), "starting a group");
    for (size_t r = 0; r < m_devices.size(); ++r) {
      check(ncclAllReduce(inputs[r].data, outputs[r].data, static_cast<size_t>(count), ncclType(inputs[r].elem),
                          ncclSum, m_comms[r], m_devices[r]->stream()),
            "all-reduce");
    }
    check(ncclGroupEnd(), "ending a group");
  }

  std::string kernel() const override { return "NCCL ncclAllReduce (sum)"; }

 private:
  std::vector<GpuDevice*> m_devices;
  std::vector<ncclComm_t> m_comms;
};

DeviceGroup makeCudaDevices(int count) {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0) {
    const std::string why = status != cudaSuccess ? cudaGetErrorString(status) : "0 devices";
    throw Error(ErrorKind::kNoDevice, "no CUDA device found (" + why + ")");
  }
  if (devices < count) {
    throw Error(ErrorKind::kNoDevice, std::to_string(count) + " replicas need " + std::to_string(count) +
                                          " CUDA devices, and " + std::to_string(devices) + " are visible");
  }
  DeviceGroup group;
  std::vector<GpuDevice*> gpus;
  for (int i = 0; i < count; ++i) {
    auto gpu = std::make_unique<GpuDevice>(i);
    gpus.push_back(gpu.get());
    group.devices.push_back(std::move(gpu));
  }
  if (count > 1) group.collective = std::make_unique<NcclCollective>(gpus);  // one GPU needs no communicator
  return group;
}

}  // namespace tpusim::reference::cuda
