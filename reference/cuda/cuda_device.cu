#include "reference/cuda/cuda_device.hpp"

#include <cuda_runtime.h>

#include "sim/common/error.hpp"

namespace tpusim::reference {

bool cudaBuilt() { return true; }

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
  return device;
}

}  // namespace tpusim::reference
