#include "api/npy.hpp"

#include <fstream>
#include <vector>

#include "sim/common/error.hpp"

namespace tpusim {

void writeNpy(const ir::TensorValue& value, const std::string& path) {
  const bool floating = ir::TensorValue::isFloating(value.dtype);
  const bool f64 = value.dtype == DType::kF64;
  std::string shape = "(";
  for (int64_t d : value.shape) shape += std::to_string(d) + ",";
  if (value.shape.size() > 1) shape.pop_back();  // (3,) keeps its comma; (2,3) does not
  shape += ")";
  std::string header = std::string("{'descr': '") + (floating ? (f64 ? "<f8" : "<f4") : "<i8") +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Magic, version, header length, then the header padded with spaces to a
  // multiple of 64 bytes and ended by a newline.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::ofstream file(path, std::ios::binary);
  if (!file) throw Error(ErrorKind::kInvalidConfig, "cannot write '" + path + "'");
  const auto length = static_cast<uint16_t>(header.size());
  file.write("\x93NUMPY\x01\x00", 8);
  const char little[2] = {static_cast<char>(length & 0xff), static_cast<char>(length >> 8)};
  file.write(little, 2);
  file.write(header.data(), static_cast<std::streamsize>(header.size()));
  if (floating && !f64) {
    std::vector<float> data(value.floats.begin(), value.floats.end());
    file.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size() * sizeof(float)));
  } else if (floating) {
    file.write(reinterpret_cast<const char*>(value.floats.data()),
               static_cast<std::streamsize>(value.floats.size() * sizeof(double)));
  } else {
    file.write(reinterpret_cast<const char*>(value.ints.data()),
               static_cast<std::streamsize>(value.ints.size() * sizeof(int64_t)));
  }
  if (!file) throw Error(ErrorKind::kInvalidConfig, "cannot write '" + path + "'");
}

}  // namespace tpusim
