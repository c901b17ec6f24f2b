// The build without CUDA (CMake found no nvcc): the cuda backend says so.
#include "reference/cuda/cuda_device.hpp"

#include "sim/common/error.hpp"

namespace tpusim::reference {

bool cudaBuilt() { return false; }

CudaDevice firstCudaDevice() {
  throw Error(ErrorKind::kUnsupported,
              "this tpusim was built without CUDA (CMake found no nvcc): rebuild where nvcc is on PATH or at "
              "/usr/local/cuda");
}

}  // namespace tpusim::reference
