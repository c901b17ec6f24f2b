#include "frontend/import/onnx_import.hpp"

#include <fstream>

#include <gtest/gtest.h>

#include "sim/common/error.hpp"
#include "tests/support/onnx_builder.hpp"

namespace tpusim {
namespace {

std::string importError(onnx::ModelProto& model, OnnxImportOptions options = {}) {
  try {
    importOnnxModel(model, options);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(OnnxImport, MlpWithSymbolicBatch) {
  auto b = testing::OnnxBuilder::mlp();
  const ImportedModel model = importOnnxModel(b.model(), OnnxImportOptions{64});
  EXPECT_EQ(model.batch, 64);
  EXPECT_FALSE(model.has_loss);
  // Gemm = MatMul + bias Add: 2 Gemms and a Relu give 5 ops.
  ASSERT_EQ(model.graph.ops().size(), 5u);
  EXPECT_EQ(model.graph.ops()[0].type, ir::OpType::kMatMul);
  EXPECT_TRUE(model.graph.ops()[0].transpose_b);
  EXPECT_EQ(model.graph.ops()[1].type, ir::OpType::kAdd);
  ASSERT_EQ(model.graph.outputs().size(), 1u);
  const ir::Tensor& logits = model.graph.tensor(model.graph.outputs()[0]);
  EXPECT_EQ(logits.name, "logits");
  EXPECT_EQ(logits.shape, (ir::Shape{64, 4}));
}

TEST(OnnxImport, DefaultBatchAndFixedBatch) {
  auto b = testing::OnnxBuilder::mlp();
  EXPECT_EQ(importOnnxModel(b.model(), {}).batch, kDefaultBatch);
  testing::OnnxBuilder fixed;
  fixed.input("x", {5, 16}).weight("w", {16, 2});
  fixed.node("MatMul", {"x", "w"}, "y");
  fixed.output("y");
  EXPECT_EQ(importOnnxModel(fixed.model(), {}).batch, 5);
  EXPECT_NE(importError(fixed.model(), OnnxImportOptions{8}).find("fixed batch dimension of 5"), std::string::npos);
}

TEST(OnnxImport, ModelWithItsOwnLoss) {
  auto b = testing::OnnxBuilder::mlpWithLoss();
  const ImportedModel model = importOnnxModel(b.model(), OnnxImportOptions{4});
  EXPECT_TRUE(model.has_loss);
  EXPECT_EQ(model.graph.tensor(model.graph.outputs()[0]).role, ir::TensorRole::kLoss);
}

TEST(OnnxImport, UnsupportedOpNamesOpAndNode) {
  auto b = testing::OnnxBuilder::mlp();
  b.node("RoiAlign", {"logits"}, "roi_out");
  const std::string message = importError(b.model());
  EXPECT_NE(message.find("node 'roi_out_node' (RoiAlign)"), std::string::npos) << message;
  EXPECT_NE(message.find("op RoiAlign is not supported yet"), std::string::npos) << message;
}

TEST(OnnxImport, CyclicOrUnsortedGraphIsAnError) {
  testing::OnnxBuilder b;
  b.input("x", {-1, 4});
  b.node("Relu", {"y"}, "z");  // uses y before it is produced, and y uses z: a cycle
  b.node("Relu", {"z"}, "y");
  b.output("y");
  EXPECT_NE(importError(b.model()).find("no earlier node produces"), std::string::npos);
}

TEST(OnnxImport, ShapeMismatchNamesTheNode) {
  testing::OnnxBuilder b;
  b.input("x", {-1, 16}).weight("w", {8, 8});
  b.node("MatMul", {"x", "w"}, "y");
  b.output("y");
  const std::string message = importError(b.model());
  EXPECT_NE(message.find("contracting dimensions differ"), std::string::npos) << message;
  EXPECT_NE(message.find("(MatMul)"), std::string::npos) << message;
}

TEST(OnnxImport, OldOpsetAndMissingGraph) {
  testing::OnnxBuilder old(11);
  old.input("x", {1, 2});
  old.node("Relu", {"x"}, "y");
  old.output("y");
  EXPECT_NE(importError(old.model()).find("opset 11 is older than 13"), std::string::npos);
  onnx::ModelProto empty;
  EXPECT_NE(importError(empty).find("no graph nodes"), std::string::npos);
}

TEST(OnnxImport, GarbageFileIsNotAnOnnxModel) {
  const std::string path = ::testing::TempDir() + "/garbage.onnx";
  std::ofstream(path) << "this is not a protobuf \xff\xff\xff";
  try {
    importOnnxFile(path, {});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(error.what()).find("not an ONNX model"), std::string::npos) << error.what();
  }
}

TEST(OnnxImport, ShippedMlpTrace) {
  const ImportedModel model = importOnnxFile(TPUSIM_SOURCE_DIR "/traces/mlp.onnx", OnnxImportOptions{128});
  EXPECT_EQ(model.graph.ops().size(), 8u);  // 3 x (MatMul + Add) + 2 Relu
  EXPECT_EQ(model.graph.tensor(model.graph.outputs()[0]).shape, (ir::Shape{128, 10}));
}

}  // namespace
}  // namespace tpusim

namespace tpusim {
namespace {

TEST(OnnxImport, ViewsNeedStaticShapes) {
  testing::OnnxBuilder b;
  b.input("x", {2, 3, 4}).input("shape", {2}, onnx::TensorProto::INT64);
  b.node("Reshape", {"x", "shape"}, "y");
  b.output("y");
  const std::string message = importError(b.model());
  EXPECT_NE(message.find("must be a constant integer tensor"), std::string::npos) << message;
  // Known at compile time, the same model imports: 0 copies a dimension, -1 is inferred.
  OnnxImportOptions options;
  options.known_inputs["shape"] = ir::TensorValue{{2}, DType::kInt64, {}, {0, -1}};
  const ImportedModel model = importOnnxModel(b.model(), options);
  EXPECT_EQ(model.graph.tensor(model.graph.outputs()[0]).shape, (ir::Shape{2, 12}));
  options.known_inputs["shape"] = ir::TensorValue{{2}, DType::kInt64, {}, {5, -1}};
  EXPECT_NE(importError(b.model(), options).find("cannot infer the -1"), std::string::npos);
}

TEST(OnnxImport, FlattenSqueezeUnsqueeze) {
  testing::OnnxBuilder b;
  b.input("x", {2, 1, 3, 4});
  auto& flatten = b.node("Flatten", {"x"}, "flat");
  auto* axis = flatten.add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(2);
  b.node("Squeeze", {"x"}, "squeezed");
  b.output("flat").output("squeezed");
  const ImportedModel model = importOnnxModel(b.model(), {});
  EXPECT_EQ(model.graph.tensor(model.graph.outputs()[0]).shape, (ir::Shape{2, 12}));
  EXPECT_EQ(model.graph.tensor(model.graph.outputs()[1]).shape, (ir::Shape{2, 3, 4}));
}

}  // namespace
}  // namespace tpusim
