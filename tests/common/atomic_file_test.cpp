// Output files are written whole or not at all (sim/common/atomic_file.hpp).
#include "sim/common/atomic_file.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "sim/common/error.hpp"

namespace tpusim {
namespace {

namespace fs = std::filesystem;

std::string contentsOf(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

fs::path freshDirectory(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(AtomicFile, ReplacesTheFileWholeAndLeavesNoTemporary) {
  const fs::path dir = freshDirectory("tpusim-atomic");
  const fs::path path = dir / "report.json";
  writeFileAtomically(path.string(), "first");
  writeFileAtomically(path.string(), std::string("second\0with a zero byte", 23));
  EXPECT_EQ(contentsOf(path), std::string("second\0with a zero byte", 23));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  fs::remove_all(dir);
}

// A write that fails (here: its final name is a directory, so the rename fails) leaves what was
// there and no temporary, and says which file.
TEST(AtomicFile, AFailedWriteLeavesThePreviousStateAndNoTemporary) {
  const fs::path dir = freshDirectory("tpusim-atomic-fail");
  fs::create_directories(dir / "taken");
  try {
    writeFileAtomically((dir / "taken").string(), "text");
    FAIL() << "the write over a directory succeeded";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kInvalidConfig);
    EXPECT_NE(std::string(error.what()).find("cannot write '" + (dir / "taken").string() + "'"), std::string::npos);
  }
  EXPECT_TRUE(fs::is_directory(dir / "taken"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  EXPECT_THROW(writeFileAtomically((dir / "missing" / "x.csv").string(), "text"), Error);
  removePendingAtomicWrite();  // nothing pending: a no-op
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tpusim
