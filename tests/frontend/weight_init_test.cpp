// The made-up weights of shape-only models (frontend/import/weight_init.hpp): the rule
// each reader picks, and the importer's choice for every weight of traces/resnet50.onnx.
#include "frontend/import/weight_init.hpp"

#include <cmath>

#include <gtest/gtest.h>

#include "frontend/import/onnx_import.hpp"

namespace tpusim {
namespace {

using Kind = WeightInit::Kind;

TEST(WeightInit, FollowsPyTorchsDefaultsByTheOpThatReadsTheWeight) {
  const WeightInit conv = weightInitFor("Conv", 1, {64, 3, 7, 7}, false);
  EXPECT_EQ(conv.kind, Kind::kUniform);
  EXPECT_DOUBLE_EQ(conv.bound, 1.0 / std::sqrt(3.0 * 7 * 7));  // fan_in = C x KH x KW
  EXPECT_DOUBLE_EQ(weightInitFor("Gemm", 1, {2048, 1000}, false).bound, 1.0 / std::sqrt(2048.0));
  EXPECT_DOUBLE_EQ(weightInitFor("Gemm", 1, {1000, 2048}, true).bound, 1.0 / std::sqrt(2048.0));  // transB
  EXPECT_DOUBLE_EQ(weightInitFor("MatMul", 1, {768, 3072}, false).bound, 1.0 / std::sqrt(768.0));
  EXPECT_DOUBLE_EQ(weightInitFor("Transpose", 0, {3072, 768}, false).bound, 1.0 / std::sqrt(768.0));  // Linear [out, in]
  EXPECT_DOUBLE_EQ(weightInitFor("Gather", 0, {30522, 768}, false).bound, 0.02 * std::sqrt(3.0));  // std 0.02
  EXPECT_EQ(weightInitFor("Conv", 2, {64}, false).kind, Kind::kZeros);
  EXPECT_EQ(weightInitFor("Gemm", 2, {1000}, false).kind, Kind::kZeros);
  const Kind bn[] = {Kind::kOnes, Kind::kZeros, Kind::kZeros, Kind::kOnes};  // scale, bias, mean, variance
  for (int input = 1; input <= 4; ++input) {
    EXPECT_EQ(weightInitFor("BatchNormalization", input, {64}, false).kind, bn[input - 1]) << input;
  }
  EXPECT_EQ(weightInitFor("LayerNormalization", 1, {768}, false).kind, Kind::kOnes);
  EXPECT_EQ(weightInitFor("LayerNormalization", 2, {768}, false).kind, Kind::kZeros);
  EXPECT_EQ(weightInitFor("Add", 0, {768}, false).kind, Kind::kZeros);
  EXPECT_DOUBLE_EQ(weightInitFor("Add", 1, {1, 197, 768}, false).bound, 1.0 / std::sqrt(768.0));
  EXPECT_EQ(weightInitFor("", -1, {5}, false).kind, Kind::kZeros);
}

TEST(WeightInit, TheImporterChoosesOneForEveryShapeOnlyWeightOfResnet50) {
  OnnxImportOptions options;
  options.batch = 2;
  const ImportedModel model = importOnnxFile(TPUSIM_SOURCE_DIR "/traces/resnet50.onnx", options);
  ASSERT_TRUE(model.shape_only_weights);
  std::map<std::string, int> rules;
  for (const auto& [name, init] : model.weight_inits) ++rules[init.rule.substr(0, init.rule.find(':'))];
  EXPECT_EQ(model.weight_inits.size(), 267u);
  EXPECT_EQ(rules["Conv weight"], 53);
  EXPECT_EQ(rules["BatchNormalization scale"], 53);
  EXPECT_EQ(rules["BatchNormalization running variance"], 53);
  EXPECT_EQ(rules["Gemm B"], 1);
  EXPECT_EQ(model.weight_inits.at("fc.weight").bound, 1.0 / std::sqrt(2048.0));
}

}  // namespace
}  // namespace tpusim
