// Identification of Program files (traces/program.proto).
#pragma once

#include <cstdint>

namespace tpusim {

inline constexpr uint32_t kProgramSchemaVersion = 1;
inline constexpr const char* kProgramFormat = "tpusim.Program";

}  // namespace tpusim
