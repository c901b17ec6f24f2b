// The build without CUDA (CMake found no nvcc): the CUDA executor says so.
#include "reference/cuda/cuda_executor.hpp"

#include "sim/common/error.hpp"

namespace tpusim::reference {

namespace {

[[noreturn]] void notBuilt() {
  throw Error(ErrorKind::kUnsupported,
              "this tpusim was built without CUDA (CMake found no nvcc): the CUDA executor "
              "is not available");
}

}  // namespace

CudaExecutor::CudaExecutor(const ir::Graph& graph) : m_graph(graph) {
  notBuilt();
}

TimedRun CudaExecutor::runTimed(const std::map<std::string, ir::TensorValue>&, const TimingOptions&) const {
  notBuilt();
}

}  // namespace tpusim::reference
