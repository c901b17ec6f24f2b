// tpusim validate's measurement file and its one-op models (api/validation/).
#include <gtest/gtest.h>

#include "api/validation/case_model.hpp"
#include "api/validation/measured_cases.hpp"
#include "api/validation/validate.hpp"
#include "frontend/import/onnx_import.hpp"
#include "sim/common/error.hpp"
#include "tests/support/expect_error.hpp"

namespace tpusim {
namespace {

using Json = nlohmann::json;

Json caseOf(const std::string& op, std::vector<int64_t> shape) {
  Json c = {{"op", op}, {"dtype", "float16"}, {"measured_us", 1.0}};
  if (op == "matmul") {
    c["dims"] = {{"M", shape[0]}, {"K", shape[1]}, {"N", shape[2]}};
  } else {
    c["shape"] = shape;
  }
  return c;
}

TEST(MeasuredCases, ReadsEachCasesFields) {
  Json norm = caseOf("layer_norm", {2, 8, 256});
  norm["axis"] = {2};
  norm["out_dtype"] = "float32";
  Json pool = caseOf("max_pool", {1, 4, 16, 16});
  pool["window"] = {3, 3};
  pool["strides"] = {2, 2};
  const MeasuredCases file =
      parseMeasuredCases({{"source", "here"}, {"cases", {caseOf("matmul", {64, 32, 16}), norm, pool}}}, "t.json");
  ASSERT_EQ(file.cases.size(), 3u);
  EXPECT_EQ(file.source, "here");
  EXPECT_EQ(file.cases[0].shape, (std::vector<int64_t>{64, 32, 16}));
  EXPECT_EQ(caseLabel(file.cases[0]), "matmul 64x32x16");
  EXPECT_EQ(file.cases[1].axis, (std::vector<int64_t>{2}));
  EXPECT_EQ(file.cases[1].out_dtype, "float32");
  EXPECT_EQ(caseLabel(file.cases[1]), "layer_norm [2, 8, 256]");
  EXPECT_EQ(file.cases[2].window, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(file.cases[2].index, 2u);
}

TEST(MeasuredCases, AMalformedCaseIsAnErrorNamingIt) {
  Json bad = caseOf("add", {4});
  bad.erase("measured_us");
  testing::expectError([&] { parseMeasuredCases({{"cases", {caseOf("add", {4}), bad}}}, "t.json"); }, ErrorKind::kInvalidInput,
               "t.json: case 1: needs a number 'measured_us'");
  testing::expectError([&] { parseMeasuredCases({{"cases", {caseOf("add", {4, -2})}}}, "t.json"); }, ErrorKind::kInvalidInput,
               "'shape' must hold positive integers");
  testing::expectError([&] { parseMeasuredCases({{"cases", {caseOf("add", {1 << 20, 1 << 20, 1 << 20})}}}, "t.json"); },
                       ErrorKind::kInvalidInput, "more than 10^12 elements");
  testing::expectError([&] { readMeasuredCases("/nonexistent/cases.json"); }, ErrorKind::kInvalidInput, "does not exist");
}

TEST(CaseModel, AnUnknownOpOrDtypeIsUnsupported) {
  MeasuredCase c = parseMeasuredCases({{"cases", {caseOf("softsign", {4})}}}, "t").cases[0];
  testing::expectError([&] { caseModel(c); }, ErrorKind::kUnsupported, "unknown op 'softsign'");
  c.op = "add";
  c.dtype = "int4";
  testing::expectError([&] { caseModel(c); }, ErrorKind::kUnsupported, "dtype 'int4'");
}

// Every op a measurement file may name builds a model that imports, compiles and
// simulates to a positive time.
TEST(CaseModel, EveryKnownOpRunsThroughTheFrontendAndSimulator) {
  const HardwareParams hw = HardwareParams::load("tpuv4");
  for (const auto& [op, what] : measuredOps()) {
    const std::vector<int64_t> shape = op == "matmul"                                         ? std::vector<int64_t>{256, 128, 384}
                                       : op.find("pool") != std::string::npos || op[0] == 'b' ? std::vector<int64_t>{2, 8, 32, 64}
                                                                                              : std::vector<int64_t>{16, 256};
    SCOPED_TRACE(op);
    Json c = caseOf(op, shape);
    if (op.find("norm") != std::string::npos) c["out_dtype"] = "float32";
    const MeasuredCase f16 = parseMeasuredCases({{"cases", {c}}}, "t").cases[0];
    const double us = simulateCase(f16, hw);
    EXPECT_GT(us, 0);
  }
}

}  // namespace
}  // namespace tpusim
