#include "sim/common/atomic_file.hpp"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <system_error>

#include "sim/common/error.hpp"

namespace tpusim {

namespace {

// The temporary being written: a fixed buffer and a flag, which a signal handler may read.
// Writes take the mutex, so one temporary exists at a time.
constexpr size_t kMaxPendingPath = 4096;
char g_pending[kMaxPendingPath];
std::atomic<bool> g_has_pending{false};
std::mutex g_writing;

}  // namespace

void writeFileAtomically(const std::string& path, const std::string& contents) {
  const std::lock_guard<std::mutex> lock(g_writing);
  const std::string temporary = path + ".partial-" + std::to_string(::getpid());
  const bool registered = temporary.size() < kMaxPendingPath;
  if (registered) {
    std::memcpy(g_pending, temporary.c_str(), temporary.size() + 1);
    g_has_pending.store(true);
  }
  const auto fail = [&](const std::string& why) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    g_has_pending.store(false);
    throw Error(ErrorKind::kInvalidConfig, "cannot write '" + path + "': " + why);
  };
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    if (!file) fail("cannot create a file there");
    file.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    file.flush();
    if (!file) fail("the write failed (is the disk full?)");
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) fail(error.message());
  g_has_pending.store(false);
}

void removePendingAtomicWrite() {
  if (g_has_pending.load()) ::unlink(g_pending);
}

}  // namespace tpusim
