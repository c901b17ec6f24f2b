// Writes a tensor as a NumPy .npy file (format version 1.0, little-endian,
// C order): float32 for f32, bf16 and f16 values (bf16 and f16 are exact in
// it), float64 for f64, int64 for integer and bool tensors; and reads back
// what it writes.
#pragma once

#include <string>

#include "frontend/ir/tensor_value.hpp"

namespace tpusim {

// Throws Error (kInvalidConfig) when the file cannot be written.
void writeNpy(const ir::TensorValue& value, const std::string& path);

// The shape and values of a .npy file of writeNpy's three element types; the
// dtype is f32, f64 or int64 as stored. Throws Error (kInvalidInput) for a file
// that is missing, of another format or element type, or cut short.
ir::TensorValue readNpy(const std::string& path);

}  // namespace tpusim
