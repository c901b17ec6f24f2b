// Identification of Program files (traces/program.proto), and the names of their instructions.
#pragma once

#include <cstdint>
#include <string>

#include "traces/program.pb.h"

namespace tpusim {

// Schema 2 names instructions by `part` (Instruction.name empty); schema 1 wrote whole names.
inline constexpr uint32_t kProgramSchemaVersion = 2;
inline constexpr uint32_t kOldestProgramSchemaVersion = 1;
inline constexpr const char* kProgramFormat = "tpusim.Program";

inline bool readableProgramSchema(uint32_t version) {
  return version >= kOldestProgramSchemaVersion && version <= kProgramSchemaVersion;
}

// "<op>.c<core>.<part>", or the name the instruction was given whole.
inline std::string instructionName(const program::Instruction& ins) {
  if (!ins.name().empty()) return ins.name();
  const std::string core = std::to_string(ins.core());
  std::string name;
  name.reserve(ins.op().size() + core.size() + ins.part().size() + 3);
  name.append(ins.op()).append(".c").append(core);
  if (!ins.part().empty()) name.append(".").append(ins.part());
  return name;
}

}  // namespace tpusim
