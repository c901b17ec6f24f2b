#include "sim/common/dtype.hpp"

#include "sim/common/error.hpp"

namespace tpusim {

uint32_t dtypeBytes(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kBF16: return 2;
    case DType::kF16: return 2;
    case DType::kInt8: return 1;
    case DType::kUInt8: return 1;
    case DType::kInt32: return 4;
    case DType::kUInt32: return 4;
    case DType::kInt64: return 8;
    case DType::kUInt64: return 8;
    case DType::kBool: return 1;
    case DType::kF64: return 8;
  }
  return 0;
}

const char* dtypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kBF16: return "bf16";
    case DType::kF16: return "f16";
    case DType::kInt8: return "int8";
    case DType::kUInt8: return "uint8";
    case DType::kInt32: return "int32";
    case DType::kUInt32: return "uint32";
    case DType::kInt64: return "int64";
    case DType::kUInt64: return "uint64";
    case DType::kBool: return "bool";
    case DType::kF64: return "f64";
  }
  return "?";
}

bool isFloatingDType(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16 || dtype == DType::kF64;
}

DType parseDType(std::string_view name) {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16, DType::kInt8, DType::kUInt8, DType::kInt32,
                      DType::kUInt32, DType::kInt64, DType::kUInt64, DType::kBool, DType::kF64}) {
    if (name == dtypeName(dtype)) return dtype;
  }
  std::string message = "unknown dtype '";
  message.append(name).append("'");
  throw Error(ErrorKind::kInvalidConfig, message);
}

}  // namespace tpusim
