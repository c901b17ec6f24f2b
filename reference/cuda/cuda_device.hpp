// The CUDA device the CUDA reference backend runs on. Built from cuda_device.cu
// where CMake finds nvcc, else from cuda_device_none.cpp, which says so.
#pragma once

#include <cstdint>
#include <string>

namespace tpusim::reference {

struct CudaDevice {
  int index = 0;
  int devices = 0;          // CUDA devices visible to the process
  std::string name;         // "NVIDIA H200"
  int compute_capability = 0;  // major * 10 + minor: 90 for sm_90
  uint64_t memory_bytes = 0;
  // The driver's and the libraries' versions, as they report them at run time (the libraries
  // loaded can be newer than the headers built against): "driver 13.0, runtime 13.0, cuBLAS
  // 13.0.2, cuDNN 9.19.0, NCCL 2.28.3".
  std::string libraries;
};

// Device 0. Throws Error: kNoDevice when no CUDA device is visible (or the driver
// cannot run), kUnsupported when this build has no CUDA.
CudaDevice firstCudaDevice();

// Whether this build includes the CUDA backend.
bool cudaBuilt();

}  // namespace tpusim::reference
