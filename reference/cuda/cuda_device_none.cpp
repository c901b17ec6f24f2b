// The build without CUDA (CMake found no nvcc or no cuDNN): the cuda backend says so.
#include "reference/cuda/cuda_device.hpp"
#include "reference/cuda/device.hpp"

#include "sim/common/error.hpp"

namespace tpusim::reference {

bool cudaBuilt() { return false; }

namespace {

[[noreturn]] void notBuilt() {
  throw Error(ErrorKind::kUnsupported,
              "this tpusim was built without CUDA (CMake found no nvcc, or no cuDNN): rebuild where nvcc is on "
              "PATH or at /usr/local/cuda");
}

}  // namespace

CudaDevice firstCudaDevice() { notBuilt(); }

std::unique_ptr<cuda::Device> cuda::makeCudaDevice() { notBuilt(); }

}  // namespace tpusim::reference
