// Element types shared by the frontend IR, the Program and the simulator.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tpusim {

enum class DType : uint8_t { kF32, kBF16, kF16, kInt8, kUInt8, kInt32, kUInt32, kInt64, kUInt64, kBool };

uint32_t dtypeBytes(DType dtype);
const char* dtypeName(DType dtype);
// Accepts the names dtypeName prints; an unknown name is an invalid-config error.
DType parseDType(std::string_view name);

}  // namespace tpusim
