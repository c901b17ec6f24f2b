#include "fuzz/fuzz_support.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "sim/common/log.hpp"

namespace tpusim::fuzz {

namespace fs = std::filesystem;

void quietOnce() {
  static const bool done = [] {
    setLogLevel("off");
    return true;
  }();
  (void)done;
}

std::string scratchFile(const std::string& name, std::string_view bytes) {
  static const fs::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    fs::path path = fs::path(tmp && *tmp ? tmp : "/tmp") / ("tpusim-fuzz-" + std::to_string(getpid()));
    fs::create_directories(path);
    return path;
  }();
  const fs::path path = dir / name;
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path.string();
}

std::string_view asText(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

}  // namespace tpusim::fuzz
