#include "reference/cuda/cuda_device.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <string>

#include "sim/common/error.hpp"

namespace tpusim::reference {

bool cudaBuilt() { return true; }

namespace {

// CUDA's versions are major * 1000 + minor * 10; cuDNN 9's major * 10000 + minor * 100 + patch,
// as NCCL's since 2.9.
std::string cudaVersion(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}
std::string tripleVersion(long long version) {
  return std::to_string(version / 10000) + "." + std::to_string(version % 10000 / 100) + "." +
         std::to_string(version % 100);
}

std::string libraryVersions() {
  int driver = 0, runtime = 0, nccl = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  int cublas[3] = {};
  cublasGetProperty(MAJOR_VERSION, &cublas[0]);
  cublasGetProperty(MINOR_VERSION, &cublas[1]);
  cublasGetProperty(PATCH_LEVEL, &cublas[2]);
  const std::string nccl_text = ncclGetVersion(&nccl) == ncclSuccess ? tripleVersion(nccl) : "unknown";
  return "driver " + cudaVersion(driver) + ", runtime " + cudaVersion(runtime) + ", cuBLAS " +
         std::to_string(cublas[0]) + "." + std::to_string(cublas[1]) + "." + std::to_string(cublas[2]) + ", cuDNN " +
         tripleVersion(static_cast<long long>(cudnnGetVersion())) + ", NCCL " + nccl_text;
}

}  // namespace

CudaDevice firstCudaDevice() {
  CudaDevice device;
  const cudaError_t status = cudaGetDeviceCount(&device.devices);
  if (status != cudaSuccess || device.devices == 0) {
    const std::string why = status != cudaSuccess ? cudaGetErrorString(status) : "0 devices";
    throw Error(ErrorKind::kNoDevice, "no CUDA device found (" + why + ")");
  }
  cudaDeviceProp props{};
  if (cudaGetDeviceProperties(&props, 0) != cudaSuccess) {
    throw Error(ErrorKind::kNoDevice, "no CUDA device found (cannot read device 0's properties)");
  }
  device.name = props.name;
  device.compute_capability = props.major * 10 + props.minor;
  device.memory_bytes = props.totalGlobalMem;
  device.libraries = libraryVersions();
  return device;
}

}  // namespace tpusim::reference
