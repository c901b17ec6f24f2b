// The build without CUDA (CMake found no nvcc, cuDNN or NCCL): the cuda backend says so.
#include "reference/cuda/cuda_device.hpp"
#include "reference/cuda/device.hpp"

#include "sim/common/error.hpp"

namespace tpusim::reference {

bool cudaBuilt() { return false; }

namespace {

[[noreturn]] void notBuilt() {
  throw Error(ErrorKind::kUnsupported,
              "this tpusim was built without CUDA (CMake found no nvcc, or no cuDNN or NCCL): rebuild where nvcc is on "
              "PATH or at /usr/local/cuda");
}

}  // namespace

CudaDevice firstCudaDevice() { notBuilt(); }

cuda::DeviceGroup cuda::makeCudaDevices(int) { notBuilt(); }

}  // namespace tpusim::reference
