// Element types shared by the frontend IR, the Program and the simulator.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tpusim {

// kF64 is appended last so that the existing values keep their numbers.
enum class DType : uint8_t { kF32, kBF16, kF16, kInt8, kUInt8, kInt32, kUInt32, kInt64, kUInt64, kBool, kF64 };

uint32_t dtypeBytes(DType dtype);
const char* dtypeName(DType dtype);
// f64, f32, bf16 and f16: the types whose values the executor holds as floating point.
bool isFloatingDType(DType dtype);
// Accepts the names dtypeName prints; an unknown name is an invalid-config error.
DType parseDType(std::string_view name);

}  // namespace tpusim
