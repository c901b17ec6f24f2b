// Fuzz target: an ONNX model, imported and compiled to a Program on tpuv4 (inference at
// batch 4, and training when inference compiles), as `tpusim compile MODEL` does.
#include "api/session.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tpusim;
  static const HardwareParams hw = HardwareParams::load("tpuv4");
  return fuzz::expectErrors([&] {
    RunRequest request;
    request.model_path = fuzz::scratchFile("model.onnx", fuzz::asText(data, size));
    request.batch = 4;
    request.mode = "inference";
    compileRequest(request, hw);
    request.mode = "training";
    compileRequest(request, hw);
  });
}
