#include "frontend/import/onnx_tensor.hpp"

#include <cstring>
#include <fstream>

#include <onnx/onnx_pb.h>

#include "sim/common/error.hpp"
#include "sim/common/numerics.hpp"

namespace tpusim {

namespace {

template <typename T>
std::vector<T> rawValues(const std::string& raw, size_t count, const std::string& name) {
  if (raw.size() != count * sizeof(T)) {
    throw Error(ErrorKind::kInvalidInput, "tensor '" + name + "' has " + std::to_string(raw.size()) +
                                              " bytes of raw data, expected " + std::to_string(count * sizeof(T)));
  }
  std::vector<T> values(count);
  // ONNX raw data is little-endian, as is x86. An empty vector's data() may be null, which
  // memcpy never takes, even for 0 bytes.
  if (count > 0) std::memcpy(values.data(), raw.data(), raw.size());
  return values;
}

template <typename Field>
void checkCount(const Field& field, size_t count, const std::string& name) {
  if (static_cast<size_t>(field.size()) != count) {
    throw Error(ErrorKind::kInvalidInput, "tensor '" + name + "' has " + std::to_string(field.size()) +
                                              " values, its shape needs " + std::to_string(count));
  }
}

}  // namespace

ir::TensorValue decodeOnnxTensor(const onnx::TensorProto& tensor) {
  ir::TensorValue value;
  const std::string& name = tensor.name();
  value.shape.assign(tensor.dims().begin(), tensor.dims().end());
  std::string what = "tensor '";
  what.append(name).append("'");
  const auto count = static_cast<size_t>(ir::checkedElementCount(value.shape, what));
  if (tensor.has_data_location() && tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    throw Error(ErrorKind::kUnsupported, "tensor '" + name + "' keeps its data in an external file");
  }
  const bool raw = tensor.has_raw_data();
  switch (tensor.data_type()) {
    case onnx::TensorProto::FLOAT:
      value.dtype = DType::kF32;
      if (raw) {
        const std::vector<float> values = rawValues<float>(tensor.raw_data(), count, name);
        value.floats.assign(values.begin(), values.end());
      } else {
        checkCount(tensor.float_data(), count, name);
        value.floats.assign(tensor.float_data().begin(), tensor.float_data().end());
      }
      break;
    case onnx::TensorProto::DOUBLE:
      value.dtype = DType::kF64;
      if (raw) {
        value.floats = rawValues<double>(tensor.raw_data(), count, name);
      } else {
        checkCount(tensor.double_data(), count, name);
        value.floats.assign(tensor.double_data().begin(), tensor.double_data().end());
      }
      break;
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16: {
      const bool half = tensor.data_type() == onnx::TensorProto::FLOAT16;
      value.dtype = half ? DType::kF16 : DType::kBF16;
      std::vector<uint16_t> bits;
      if (raw) {
        bits = rawValues<uint16_t>(tensor.raw_data(), count, name);
      } else {
        checkCount(tensor.int32_data(), count, name);
        for (int32_t word : tensor.int32_data()) bits.push_back(static_cast<uint16_t>(word));
      }
      for (uint16_t b : bits) value.floats.push_back(half ? numerics::f16BitsToFloat(b) : numerics::bf16BitsToFloat(b));
      break;
    }
    case onnx::TensorProto::INT64:
      value.dtype = DType::kInt64;
      if (raw) {
        value.ints = rawValues<int64_t>(tensor.raw_data(), count, name);
      } else {
        checkCount(tensor.int64_data(), count, name);
        value.ints.assign(tensor.int64_data().begin(), tensor.int64_data().end());
      }
      break;
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64: {
      // ONNX keeps both in uint64_data; values above 2^63 do not occur in models tpusim reads.
      const bool wide = tensor.data_type() == onnx::TensorProto::UINT64;
      value.dtype = wide ? DType::kUInt64 : DType::kUInt32;
      if (raw) {
        if (wide) {
          for (uint64_t v : rawValues<uint64_t>(tensor.raw_data(), count, name))
            value.ints.push_back(static_cast<int64_t>(v));
        } else {
          for (uint32_t v : rawValues<uint32_t>(tensor.raw_data(), count, name)) value.ints.push_back(v);
        }
      } else {
        checkCount(tensor.uint64_data(), count, name);
        for (uint64_t v : tensor.uint64_data()) value.ints.push_back(static_cast<int64_t>(v));
      }
      break;
    }
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL: {
      switch (tensor.data_type()) {
        case onnx::TensorProto::INT32: value.dtype = DType::kInt32; break;
        case onnx::TensorProto::INT8: value.dtype = DType::kInt8; break;
        case onnx::TensorProto::UINT8: value.dtype = DType::kUInt8; break;
        default: value.dtype = DType::kBool; break;
      }
      if (raw) {
        if (value.dtype == DType::kInt32) {
          for (int32_t v : rawValues<int32_t>(tensor.raw_data(), count, name)) value.ints.push_back(v);
        } else if (value.dtype == DType::kInt8) {
          for (int8_t v : rawValues<int8_t>(tensor.raw_data(), count, name)) value.ints.push_back(v);
        } else if (value.dtype == DType::kUInt8) {
          for (uint8_t v : rawValues<uint8_t>(tensor.raw_data(), count, name)) value.ints.push_back(v);
        } else {
          for (uint8_t v : rawValues<uint8_t>(tensor.raw_data(), count, name)) value.ints.push_back(v != 0);
        }
      } else {
        checkCount(tensor.int32_data(), count, name);
        value.ints.assign(tensor.int32_data().begin(), tensor.int32_data().end());
      }
      break;
    }
    default:
      throw Error(ErrorKind::kUnsupported, "tensor '" + name + "' has ONNX element type " +
                                               std::to_string(tensor.data_type()) + ", which tpusim does not read");
  }
  return value;
}

ir::TensorValue readOnnxTensorFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error(ErrorKind::kInvalidInput, "cannot open '" + path + "'");
  onnx::TensorProto tensor;
  if (!tensor.ParseFromIstream(&file)) throw Error(ErrorKind::kInvalidInput, path + ": not an ONNX TensorProto");
  try {
    return decodeOnnxTensor(tensor);
  } catch (const Error& error) {
    throw error.within(path);
  }
}

}  // namespace tpusim
