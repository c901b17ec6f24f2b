#include "api/npy.hpp"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "sim/common/atomic_file.hpp"
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
  const auto length = static_cast<uint16_t>(header.size());
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(length & 0xff);
  bytes += static_cast<char>(length >> 8);
  bytes += header;
  const auto append = [&](const void* data, size_t size) { bytes.append(static_cast<const char*>(data), size); };
  if (floating && !f64) {
    std::vector<float> data(value.floats.begin(), value.floats.end());
    append(data.data(), data.size() * sizeof(float));
  } else if (floating) {
    append(value.floats.data(), value.floats.size() * sizeof(double));
  } else {
    append(value.ints.data(), value.ints.size() * sizeof(int64_t));
  }
  writeFileAtomically(path, bytes);
}

namespace {

// The value of `key` in a .npy header dict ("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }").
std::string headerValue(const std::string& header, const std::string& key, const std::string& path) {
  const size_t at = header.find("'" + key + "':");
  if (at == std::string::npos) throw Error(ErrorKind::kInvalidInput, "'" + path + "': .npy header has no " + key);
  size_t begin = header.find_first_not_of(' ', at + key.size() + 3);
  const char open = begin == std::string::npos ? '\0' : header[begin];
  const char close = open == '(' ? ')' : open == '\'' ? '\'' : ',';
  const size_t end = header.find(close, begin + 1);
  if (end == std::string::npos) throw Error(ErrorKind::kInvalidInput, "'" + path + "': malformed .npy header");
  return open == '(' || open == '\'' ? header.substr(begin + 1, end - begin - 1) : header.substr(begin, end - begin);
}

ir::Shape parseShape(const std::string& text, const std::string& path) {
  ir::Shape shape;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t comma = text.find(',', pos);
    const std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? text.size() : comma + 1;
    if (item.find_first_not_of(' ') == std::string::npos) continue;
    try {
      size_t used = 0;
      const long long d = std::stoll(item, &used);
      if (d < 0) throw std::invalid_argument("negative");
      shape.push_back(d);
    } catch (const std::exception&) {
      throw Error(ErrorKind::kInvalidInput, "'" + path + "': bad .npy shape (" + text + ")");
    }
  }
  return shape;
}

}  // namespace

ir::TensorValue readNpy(const std::string& path) {
  if (!std::filesystem::exists(path)) throw Error(ErrorKind::kInvalidInput, "'" + path + "' does not exist");
  std::ifstream file(path, std::ios::binary);
  char magic[10] = {};
  if (!file.read(magic, sizeof(magic)) || std::memcmp(magic, "\x93NUMPY\x01\x00", 8) != 0) {
    throw Error(ErrorKind::kInvalidInput, "'" + path + "' is not a version 1.0 .npy file");
  }
  const size_t length =
      static_cast<unsigned char>(magic[8]) | (static_cast<size_t>(static_cast<unsigned char>(magic[9])) << 8);
  std::string header(length, '\0');
  if (!file.read(header.data(), static_cast<std::streamsize>(length))) {
    throw Error(ErrorKind::kInvalidInput, "'" + path + "': .npy header cut short");
  }
  const std::string descr = headerValue(header, "descr", path);
  if (headerValue(header, "fortran_order", path) != "False") {
    throw Error(ErrorKind::kInvalidInput, "'" + path + "': Fortran-order .npy files are not read");
  }
  ir::TensorValue value;
  value.shape = parseShape(headerValue(header, "shape", path), path);
  const auto count = static_cast<size_t>(ir::elementCount(value.shape));
  const auto readAll = [&](void* data, size_t bytes) {
    if (!file.read(static_cast<char*>(data), static_cast<std::streamsize>(bytes))) {
      throw Error(ErrorKind::kInvalidInput, "'" + path + "': .npy data cut short (" + std::to_string(count) +
                                                " elements of " + descr + " expected)");
    }
  };
  if (descr == "<f4") {
    std::vector<float> data(count);
    readAll(data.data(), count * sizeof(float));
    value.dtype = DType::kF32;
    value.floats.assign(data.begin(), data.end());
  } else if (descr == "<f8") {
    value.dtype = DType::kF64;
    value.floats.resize(count);
    readAll(value.floats.data(), count * sizeof(double));
  } else if (descr == "<i8") {
    value.dtype = DType::kInt64;
    value.ints.resize(count);
    readAll(value.ints.data(), count * sizeof(int64_t));
  } else {
    throw Error(ErrorKind::kInvalidInput,
                "'" + path + "': .npy element type " + descr + " is not one tpusim writes (<f4, <f8, <i8)");
  }
  return value;
}

}  // namespace tpusim
