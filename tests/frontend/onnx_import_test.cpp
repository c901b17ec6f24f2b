#include "frontend/import/onnx_import.hpp"
#include "frontend/import/onnx_tensor.hpp"

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

onnx::NodeProto& intsConstant(testing::OnnxBuilder& b, const std::string& name, std::vector<int64_t> values) {
  auto& node = b.node("Constant", {}, name);
  auto* attr = node.add_attribute();
  attr->set_name("value_ints");
  attr->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) attr->add_ints(v);
  return node;
}

void stringAttribute(onnx::NodeProto& node, const std::string& name, const std::string& value) {
  auto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::STRING);
  attr->set_s(value);
}

TEST(OnnxImport, ShapeArithmeticFoldsWhileCompiling) {
  // Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])), as exporters write x.view(n, -1).
  testing::OnnxBuilder b;
  b.input("x", {-1, 3, 4});
  b.node("Shape", {"x"}, "shape");
  intsConstant(b, "zero", {0});
  b.node("Gather", {"shape", "zero"}, "n");  // [1]
  intsConstant(b, "minus_one", {-1});
  auto& concat = b.node("Concat", {"n", "minus_one"}, "target");
  auto* axis = concat.add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  b.node("Reshape", {"x", "target"}, "y");
  auto* to = b.node("Cast", {"target"}, "as_float").add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::FLOAT);
  b.output("y").output("as_float");
  const ImportedModel model = importOnnxModel(b.model(), OnnxImportOptions{2});
  const ir::Graph& g = model.graph;
  EXPECT_EQ(g.tensor(g.outputs()[0]).shape, (ir::Shape{2, 12}));
  // Only the Reshape is a graph op; the folded shape enters the graph only as an output.
  ASSERT_EQ(g.ops().size(), 1u);
  EXPECT_EQ(g.ops()[0].type, ir::OpType::kReshape);
  EXPECT_EQ(model.initializers.at("as_float").floats, (std::vector<double>{2.0, -1.0}));
}

TEST(OnnxImport, CompileTimeOpsNeedConstantInputs) {
  testing::OnnxBuilder b;
  b.input("start", {1}).input("limit", {1}).input("delta", {1});
  b.node("Range", {"start", "limit", "delta"}, "r");
  b.output("r");
  std::string message = importError(b.model());
  EXPECT_NE(message.find("node 'r_node' (Range): tpusim evaluates Range only while compiling, and its input 'start' "
                         "is computed at run time"),
            std::string::npos)
      << message;
  OnnxImportOptions options;
  for (const auto& [name, v] : {std::pair{"start", 1.0f}, {"limit", 2.0f}, {"delta", 0.25f}}) {
    options.known_inputs[name] = ir::TensorValue{{}, DType::kF32, {v}, {}};
  }
  const ImportedModel model = importOnnxModel(b.model(), options);
  EXPECT_EQ(model.initializers.at("r").floats, (std::vector<double>{1.0, 1.25, 1.5, 1.75}));
  options.known_inputs["delta"].floats = {0.0f};
  EXPECT_NE(importError(b.model(), options).find("Range's delta is 0"), std::string::npos);
}

TEST(OnnxImport, DropoutIsTheIdentityUnlessRandom) {
  testing::OnnxBuilder b;
  b.input("x", {2, 3}).input("ratio", {1}).input("training", {1}, onnx::TensorProto::BOOL);
  b.node("Dropout", {"x", "ratio", "training"}, "y");
  b.output("y");
  OnnxImportOptions options;
  options.known_inputs["ratio"] = ir::TensorValue{{}, DType::kF32, {0.0f}, {}};
  options.known_inputs["training"] = ir::TensorValue{{}, DType::kBool, {}, {1}};
  const ImportedModel model = importOnnxModel(b.model(), options);
  ASSERT_EQ(model.graph.ops().size(), 1u);
  EXPECT_EQ(model.graph.ops()[0].type, ir::OpType::kReshape);
  options.known_inputs["ratio"].floats = {0.1f};
  const std::string message = importError(b.model(), options);
  EXPECT_NE(message.find("training-mode Dropout with ratio 0.1"), std::string::npos) << message;
}

TEST(OnnxImport, GeluApproximationMustBeKnown) {
  testing::OnnxBuilder b(20);
  b.input("x", {2, 3});
  stringAttribute(b.node("Gelu", {"x"}, "y"), "approximate", "sigmoid");
  b.output("y");
  const std::string message = importError(b.model());
  EXPECT_NE(message.find("unknown approximate 'sigmoid' (none or tanh)"), std::string::npos) << message;
}

TEST(OnnxImport, ExpandBroadcastsBothWays) {
  testing::OnnxBuilder b;
  b.input("x", {3, 1});
  intsConstant(b, "shape", {2, 1, 4});
  b.node("Expand", {"x", "shape"}, "y");
  b.output("y");
  const ImportedModel model = importOnnxModel(b.model(), {});
  EXPECT_EQ(model.graph.tensor(model.graph.outputs()[0]).shape, (ir::Shape{2, 3, 4}));
  EXPECT_EQ(model.graph.ops()[0].type, ir::OpType::kBroadcastTo);
}

TEST(OnnxImport, CastAndExpandErrors) {
  testing::OnnxBuilder b;
  b.input("x", {2, 3}).input("shape", {2}, onnx::TensorProto::INT64);
  auto* to = b.node("Cast", {"x"}, "y").add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::STRING);
  b.output("y");
  std::string message = importError(b.model());
  EXPECT_NE(message.find("node 'y_node' (Cast)'s 'to' has ONNX element type 8, which tpusim does not support"),
            std::string::npos)
      << message;
  b.model().mutable_graph()->mutable_node(0)->clear_attribute();
  message = importError(b.model());
  EXPECT_NE(message.find("Cast needs a 'to' type"), std::string::npos) << message;
  testing::OnnxBuilder e;
  e.input("x", {3, 1}).input("shape", {2}, onnx::TensorProto::INT64);
  e.node("Expand", {"x", "shape"}, "y");
  e.output("y");
  message = importError(e.model());
  EXPECT_NE(message.find("input 'shape' must be a constant integer tensor"), std::string::npos) << message;
}

// LeakyRelu, Elu and Selu are Unary ops that carry their attributes, ONNX's defaults when absent.
TEST(OnnxImport, ActivationsCarryTheirAttributesOrOnnxDefaults) {
  testing::OnnxBuilder b;
  b.input("x", {2, 3});
  b.node("LeakyRelu", {"x"}, "leaky");
  testing::setFloatAttribute(b.node("LeakyRelu", {"x"}, "leaky2"), "alpha", 0.2f);
  b.node("Elu", {"x"}, "elu");
  testing::setFloatAttribute(b.node("Elu", {"x"}, "elu2"), "alpha", 0.5f);
  b.node("Selu", {"x"}, "selu");
  auto& selu = b.node("Selu", {"x"}, "selu2");
  testing::setFloatAttribute(selu, "alpha", 2.0f);
  testing::setFloatAttribute(selu, "gamma", 3.0f);
  for (const char* out : {"leaky", "leaky2", "elu", "elu2", "selu", "selu2"}) b.output(out);
  const ImportedModel model = importOnnxModel(b.model(), {});
  const auto& ops = model.graph.ops();
  ASSERT_EQ(ops.size(), 6u);
  const struct {
    ir::UnaryKind kind;
    double alpha, gamma;
  } expected[] = {{ir::UnaryKind::kLeakyRelu, 0.01f, 1},
                  {ir::UnaryKind::kLeakyRelu, 0.2f, 1},
                  {ir::UnaryKind::kElu, 1, 1},
                  {ir::UnaryKind::kElu, 0.5, 1},
                  {ir::UnaryKind::kSelu, 1.67326319217681884765625, 1.05070102214813232421875},
                  {ir::UnaryKind::kSelu, 2, 3}};
  for (size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(ops[i].type, ir::OpType::kUnary) << i;
    EXPECT_EQ(ops[i].unary, expected[i].kind) << i;
    EXPECT_EQ(ops[i].alpha, expected[i].alpha) << i;  // the float attribute, exactly
    EXPECT_EQ(ops[i].gamma, expected[i].gamma) << i;
  }
  testing::setFloatAttribute(*b.model().mutable_graph()->mutable_node(0), "gamma", 2.0f);
  EXPECT_NE(importError(b.model()).find("(LeakyRelu): attribute 'gamma' is not supported"), std::string::npos);
}

// PRelu is relu(x) - slope relu(-x), the slope broadcast one way only (to X's shape).
TEST(OnnxImport, PReluDecomposesAndBroadcastsTheSlopeOneWay) {
  testing::OnnxBuilder b;
  b.input("x", {-1, 3, 4}).weight("slope", {3, 1});
  b.node("PRelu", {"x", "slope"}, "y");
  b.output("y");
  const ImportedModel model = importOnnxModel(b.model(), OnnxImportOptions{2});
  const ir::Graph& g = model.graph;
  std::vector<ir::OpType> types;
  for (const ir::Op& op : g.ops()) types.push_back(op.type);
  EXPECT_EQ(types, (std::vector<ir::OpType>{ir::OpType::kRelu, ir::OpType::kScale, ir::OpType::kRelu, ir::OpType::kMul,
                                            ir::OpType::kSub}));
  EXPECT_EQ(g.ops()[1].scalar, -1.0);
  EXPECT_EQ(g.tensor(g.outputs()[0]).shape, (ir::Shape{2, 3, 4}));
  EXPECT_EQ(g.tensor(g.ops()[3].inputs[0]).role, ir::TensorRole::kWeight);  // the slope trains

  testing::OnnxBuilder wide;  // a slope wider than X would widen the output
  wide.input("x", {3, 1}).weight("slope", {3, 4});
  wide.node("PRelu", {"x", "slope"}, "y");
  wide.output("y");
  const std::string message = importError(wide.model());
  EXPECT_NE(message.find("(PRelu): slope of shape [3,4] does not broadcast to X's shape [3,1]"), std::string::npos)
      << message;
}

// A comparison of values computed at run time is a Compare (bool); of constants, still folded.
TEST(OnnxImport, RuntimeComparisonsBecomeCompareOps) {
  testing::OnnxBuilder b;
  b.input("x", {2, 3});
  auto& zero = b.node("Constant", {}, "zero");
  auto* value = zero.add_attribute();
  value->set_name("value_float");
  value->set_type(onnx::AttributeProto::FLOAT);
  value->set_f(0.0f);
  b.node("GreaterOrEqual", {"x", "zero"}, "step_mask");
  testing::setIntAttribute(b.node("Cast", {"step_mask"}, "step"), "to", onnx::TensorProto::FLOAT);
  b.node("Not", {"step_mask"}, "negative");
  b.node("Equal", {"x", "x"}, "same");
  b.node("Less", {"zero", "zero"}, "folded");
  for (const char* out : {"step", "negative", "same", "folded"}) b.output(out);
  const ImportedModel model = importOnnxModel(b.model(), {});
  const ir::Graph& g = model.graph;
  ASSERT_EQ(g.ops().size(), 4u);
  const ir::Op& ge = g.ops()[0];
  EXPECT_EQ(ge.type, ir::OpType::kCompare);
  EXPECT_EQ(ge.compare, ir::CompareDirection::kGe);
  EXPECT_EQ(g.tensor(ge.outputs[0]).dtype, DType::kBool);
  EXPECT_EQ(g.tensor(ge.outputs[0]).shape, (ir::Shape{2, 3}));
  EXPECT_EQ(g.ops()[1].type, ir::OpType::kCast);
  EXPECT_EQ(g.tensor(g.ops()[1].outputs[0]).dtype, DType::kF32);
  // Not is x == false.
  EXPECT_EQ(g.ops()[2].type, ir::OpType::kCompare);
  EXPECT_EQ(g.ops()[2].compare, ir::CompareDirection::kEq);
  EXPECT_EQ(model.initializers.at(g.tensor(g.ops()[2].inputs[1]).name).ints, (std::vector<int64_t>{0}));
  EXPECT_EQ(g.ops()[3].compare, ir::CompareDirection::kEq);
  EXPECT_EQ(model.initializers.at("folded").ints, (std::vector<int64_t>{0}));

  testing::OnnxBuilder mixed;  // operands of two dtypes are the model's error
  mixed.input("x", {2}).input("n", {2}, onnx::TensorProto::INT64);
  mixed.node("Less", {"x", "n"}, "y");
  mixed.output("y");
  const std::string message = importError(mixed.model());
  EXPECT_NE(message.find("Compare operands have different dtypes (f32 and int64)"), std::string::npos) << message;
}

// An empty tensor in raw_data (the ONNX node suite has some): no bytes, no values. Its
// decoding copied 0 bytes to an empty vector's data(), which may be null, and memcpy with a
// null pointer is undefined even for 0 bytes (found by UBSan, scripts/sanitize.sh).
TEST(OnnxTensor, AnEmptyRawTensorDecodesToNoValues) {
  for (const int32_t type : {onnx::TensorProto::FLOAT, onnx::TensorProto::INT64, onnx::TensorProto::FLOAT16}) {
    onnx::TensorProto tensor;
    tensor.set_name("empty");
    tensor.add_dims(0);
    tensor.add_dims(3);
    tensor.set_data_type(type);
    tensor.set_raw_data("");
    const ir::TensorValue value = decodeOnnxTensor(tensor);
    EXPECT_EQ(value.shape, (ir::Shape{0, 3})) << type;
    EXPECT_TRUE(value.floats.empty() && value.ints.empty()) << type;
  }
}

// ArgMax and OneHot add tensors to the graph as they import, and each held a reference to its
// input's shape across those additions: when the graph's tensor vector grew there, the
// reference dangled (ArgMax found by AddressSanitizer, scripts/sanitize.sh; OneHot had the
// same pattern). Some number of nodes before them puts the growth inside each import; the ASan
// build checks every access, other builds the shapes.
TEST(OnnxImport, ArgMaxAndOneHotImportWhereverTheGraphGrows) {
  for (int before = 0; before < 40; ++before) {
    testing::OnnxBuilder b;
    b.input("x", {-1, 5}).input("side", {-1, 2}).input("labels", {-1, 3}, onnx::TensorProto::INT64);
    std::string side = "side";
    for (int i = 0; i < before; ++i) {
      const std::string next = "side" + std::to_string(i);
      b.node("Relu", {side}, next);
      side = next;
    }
    auto* depth = b.model().mutable_graph()->add_initializer();
    depth->set_name("depth");
    depth->set_data_type(onnx::TensorProto::INT64);
    depth->add_int64_data(6);
    b.weight("values", {2});
    testing::setIntAttribute(b.node("ArgMax", {"x"}, "arg"), "axis", 1);
    b.node("OneHot", {"labels", "depth", "values"}, "hot");
    b.output("arg").output("hot").output(side);
    const ImportedModel model = importOnnxModel(b.model(), OnnxImportOptions{4});
    ASSERT_EQ(model.graph.outputs().size(), 3u);
    EXPECT_EQ(model.graph.tensor(model.graph.outputs()[0]).shape, (ir::Shape{4, 1})) << before;
    EXPECT_EQ(model.graph.tensor(model.graph.outputs()[1]).shape, (ir::Shape{4, 3, 6})) << before;
  }
}

}  // namespace
}  // namespace tpusim
