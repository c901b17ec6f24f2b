#include "api/npy.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "sim/common/error.hpp"

namespace tpusim {
namespace {

std::string tempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("tpusim_npy_test_" + name)).string();
}

void expectInvalid(const std::string& path, const std::string& text) {
  try {
    readNpy(path);
    FAIL() << "read " << path;
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(error.what()).find(text), std::string::npos) << error.what();
  }
}

TEST(Npy, ReadsBackWhatItWrites) {
  ir::TensorValue f32{{2, 3}, DType::kBF16, {1.0, -2.5, 0.125, 3.0, 0.0, -0.0}, {}};
  ir::TensorValue f64{{3}, DType::kF64, {0.1, 0.2, 0.3}, {}};
  ir::TensorValue ints{{}, DType::kInt64, {}, {-7}};
  for (const ir::TensorValue* value : {&f32, &f64, &ints}) {
    const std::string path = tempPath("roundtrip.npy");
    writeNpy(*value, path);
    const ir::TensorValue back = readNpy(path);
    EXPECT_EQ(back.shape, value->shape);
    EXPECT_EQ(back.floats, value->floats);
    EXPECT_EQ(back.ints, value->ints);
    std::filesystem::remove(path);
  }
  const std::string path = tempPath("dtype.npy");
  writeNpy(f32, path);
  EXPECT_EQ(readNpy(path).dtype, DType::kF32);  // bf16 is stored as float32
  std::filesystem::remove(path);
}

TEST(Npy, RejectsMissingForeignAndTruncatedFiles) {
  expectInvalid(tempPath("missing.npy"), "does not exist");
  const std::string path = tempPath("bad.npy");
  std::ofstream(path) << "not numpy";
  expectInvalid(path, "is not a version 1.0 .npy file");
  ir::TensorValue value{{4}, DType::kF32, {1, 2, 3, 4}, {}};
  writeNpy(value, path);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 4);
  expectInvalid(path, "data cut short (4 elements of <f4 expected)");
  std::string text;
  {
    writeNpy(value, path);
    std::ifstream in(path, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  text.replace(text.find("<f4"), 3, "<u2");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  expectInvalid(path, "element type <u2 is not one tpusim writes");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tpusim
