// Fuzz target: a saved Program, read as binary (.tpuprog) and as text (.tpuprog.txt)
// by readProgram, and each one that reads checked against tpuv4 by validateProgram,
// as `tpusim run FILE.tpuprog` does before it simulates.
#include "frontend/program_io.hpp"
#include "fuzz/fuzz_support.hpp"
#include "sim/chip/program_check.hpp"
#include "sim/common/params.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tpusim;
  static const HardwareParams hw = HardwareParams::load("tpuv4");
  const std::string_view bytes = fuzz::asText(data, size);
  fuzz::expectErrors([&] { validateProgram(readProgram(fuzz::scratchFile("p.tpuprog", bytes)), hw.config()); });
  fuzz::expectErrors([&] { validateProgram(readProgram(fuzz::scratchFile("p.tpuprog.txt", bytes)), hw.config()); });
  return 0;
}
