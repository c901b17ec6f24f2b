// Decodes an ONNX TensorProto (an initializer or a test-data file) into a
// TensorValue: typed fields or little-endian raw_data, f16/bf16 from bits.
#pragma once

#include <string>

#include "frontend/ir/tensor_value.hpp"

namespace onnx {
class TensorProto;
}

namespace tpusim {

ir::TensorValue decodeOnnxTensor(const onnx::TensorProto& tensor);
// Reads a serialized TensorProto file (the ONNX test suite's input_0.pb, ...).
ir::TensorValue readOnnxTensorFile(const std::string& path);

}  // namespace tpusim
