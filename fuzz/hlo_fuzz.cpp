// Fuzz target: HLO text, lexed, parsed and imported into an IR Graph (importHloText),
// as `tpusim run MODEL.hlo` reads it.
#include "frontend/import/hlo_import.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tpusim;
  return fuzz::expectErrors([&] { importHloText(std::string(fuzz::asText(data, size)), "fuzz.hlo"); });
}
