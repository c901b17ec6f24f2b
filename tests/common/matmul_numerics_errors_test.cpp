// The MXU matmul numerics on input it must refuse: one-line messages with
// the error kind the CLI turns into its exit code.
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "sim/common/error.hpp"
#include "sim/common/matmul_numerics.hpp"

namespace tpusim::numerics {
namespace {

// Runs `body`, expecting an Error of `kind` whose one-line message holds `text`.
template <typename Body>
void expectError(Body body, ErrorKind kind, const std::string& text) {
  try {
    body();
    ADD_FAILURE() << "no error; expected '" << text << "'";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_EQ(error.kind(), kind) << message;
    EXPECT_NE(message.find(text), std::string::npos) << "'" << text << "' in " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(MxuMatmul, RejectsWhatTheMxuCannotDo) {
  const char* kSupported = "(supported: bf16 x bf16, f16 x f16, int8 x int8, f32 x f32)";
  const std::pair<DType, DType> pairs[] = {
      {DType::kBF16, DType::kInt8}, {DType::kF64, DType::kF64}, {DType::kInt32, DType::kInt32}};
  for (const auto& [lhs, rhs] : pairs) {
    const MatmulNumerics numerics{lhs, rhs};
    const std::string expected =
        std::string("unsupported MXU dtype pair ") + dtypeName(lhs) + " x " + dtypeName(rhs) + " " + kSupported;
    expectError([&] { checkMatmulNumerics(numerics); }, ErrorKind::kUnsupported, expected);
  }
  MatmulNumerics zero_rows;
  zero_rows.rows = 0;
  expectError([&] { checkMatmulNumerics(zero_rows); }, ErrorKind::kInvalidConfig, "rows must be at least 1");

  const MatmulNumerics bf16;
  std::vector<float> values(12);
  std::vector<float> out(12);
  expectError([&] { mxuMatmul(bf16, values, values, std::span<float>(out), 0, 3, 4); }, ErrorKind::kInvalidInput,
              "positive dimensions, got m=0 k=3 n=4");
  expectError([&] { mxuMatmul(bf16, values, values, std::span<float>(out), 3, 4, 5); }, ErrorKind::kInternal,
              "do not fit m=3 k=4 n=5");
  // Each overload takes only its own accumulator type.
  const MatmulNumerics int8{DType::kInt8, DType::kInt8};
  std::vector<int32_t> ints(12);
  expectError([&] { mxuMatmul(int8, values, values, std::span<float>(out), 3, 4, 3); }, ErrorKind::kInternal,
              "use the int32 mxuMatmul");
  expectError([&] { mxuMatmul(bf16, values, values, std::span<int32_t>(ints), 3, 4, 3); }, ErrorKind::kInternal,
              "int8 x int8 only, got bf16 x bf16");
}

}  // namespace
}  // namespace tpusim::numerics
