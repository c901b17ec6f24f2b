// Bad ONNX inputs: each is one Error of the expected kind, whose one-line message
// names the file, the node or tensor, and the problem (docs/frontend.md, "Bad input").
// Models go through importOnnxFile, as the CLI reads them.
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "frontend/import/onnx_import.hpp"
#include "sim/common/error.hpp"
#include "tests/support/onnx_builder.hpp"

namespace tpusim {
namespace {

using testing::OnnxBuilder;

std::string writeFile(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// Imports `path` and returns the Error it must raise; checks the message is one line
// that begins with the file's path.
Error fileError(const std::string& path, OnnxImportOptions options = {}) {
  try {
    importOnnxFile(path, options);
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
    return error;
  }
  ADD_FAILURE() << path << " imported without an error";
  return Error(ErrorKind::kInternal, "no error");
}

Error modelError(onnx::ModelProto& model, const std::string& name) {
  return fileError(writeFile(name + ".onnx", model.SerializeAsString()));
}

#define EXPECT_ERROR(error, expected_kind, text)                                                            \
  do {                                                                                                      \
    const Error& e_ = (error);                                                                              \
    EXPECT_EQ(e_.kind(), expected_kind) << e_.what();                                                       \
    EXPECT_NE(std::string(e_.what()).find(text), std::string::npos) << "'" << text << "' in " << e_.what(); \
  } while (false)

onnx::TensorProto& intWeight(OnnxBuilder& b, const std::string& name, std::vector<int64_t> values) {
  auto* init = b.model().mutable_graph()->add_initializer();
  init->set_name(name);
  init->set_data_type(onnx::TensorProto::INT64);
  init->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) init->add_int64_data(v);
  return *init;
}

// A float initializer with a shape and no values, as a shape-only trace has.
void shapeOnlyWeight(OnnxBuilder& b, const std::string& name, std::vector<int64_t> dims) {
  auto* init = b.model().mutable_graph()->add_initializer();
  init->set_name(name);
  init->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t dim : dims) init->add_dims(dim);
}

// --- truncated and non-ONNX files

void expectEveryCutFails(const std::string& bytes, const std::string& name, const std::vector<size_t>& cuts) {
  for (size_t cut : cuts) {
    SCOPED_TRACE(name + " cut at " + std::to_string(cut) + " of " + std::to_string(bytes.size()) + " bytes");
    const Error error = fileError(writeFile(name + "_cut.onnx", bytes.substr(0, cut)));
    EXPECT_NE(error.kind(), ErrorKind::kInternal) << error.what();
  }
}

TEST(OnnxBadInput, BuiltModelCutAtEveryLength) {
  const std::string bytes = OnnxBuilder::mlp().model().SerializeAsString();
  std::vector<size_t> cuts;
  for (size_t cut = 0; cut < bytes.size(); ++cut) cuts.push_back(cut);
  expectEveryCutFails(bytes, "built_mlp", cuts);
}

TEST(OnnxBadInput, ShippedTracesCut) {
  for (const std::string trace : {"mlp", "bert_base"}) {
    std::ifstream file(TPUSIM_SOURCE_DIR "/traces/" + trace + ".onnx", std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    ASSERT_GT(bytes.size(), 1000u);
    std::vector<size_t> cuts = {1, 16};
    for (size_t percent : {1, 10, 25, 50, 75, 90, 99}) cuts.push_back(bytes.size() * percent / 100);
    cuts.push_back(bytes.size() - 1);
    expectEveryCutFails(bytes, trace, cuts);
  }
}

TEST(OnnxBadInput, TruncatedFileSaysItDoesNotParse) {
  std::ifstream file(TPUSIM_SOURCE_DIR "/traces/mlp.onnx", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const std::string path = writeFile("half.onnx", bytes.substr(0, bytes.size() / 2));
  EXPECT_ERROR(fileError(path), ErrorKind::kInvalidInput, "not an ONNX model");
}

TEST(OnnxBadInput, EmptyFile) {
  EXPECT_ERROR(fileError(writeFile("empty.onnx", "")), ErrorKind::kInvalidInput, "not an ONNX model");
}

// --- shapes: zero, negative, symbolic

TEST(OnnxBadInput, ZeroDimensionInput) {
  OnnxBuilder b;
  b.input("x", {-1, 0});
  b.node("Relu", {"x"}, "y");
  b.output("y");
  EXPECT_ERROR(modelError(b.model(), "zero_input"), ErrorKind::kUnsupported,
               "tensor 'x' has shape [32,0] with a zero dimension");
}

TEST(OnnxBadInput, ZeroDimensionWeight) {
  OnnxBuilder b;
  b.input("x", {-1, 4}).weight("w", {4, 0});
  b.node("MatMul", {"x", "w"}, "y");
  b.output("y");
  EXPECT_ERROR(modelError(b.model(), "zero_weight"), ErrorKind::kUnsupported, "tensor 'w' has shape [4,0]");
}

TEST(OnnxBadInput, ZeroDimensionInferred) {
  // Slice [2, 2) of dimension 1 leaves nothing.
  OnnxBuilder b;
  b.input("x", {-1, 4});
  intWeight(b, "starts", {2});
  intWeight(b, "ends", {2});
  intWeight(b, "axes", {1});
  b.node("Slice", {"x", "starts", "ends", "axes"}, "y");
  b.output("y");
  const Error error = modelError(b.model(), "zero_inferred");
  EXPECT_ERROR(error, ErrorKind::kUnsupported, "node 'y_node' (Slice)");
  EXPECT_ERROR(error, ErrorKind::kUnsupported, "zero dimension");
}

TEST(OnnxBadInput, EmptyIntegerInitializerIsACompileTimeValue) {
  // An empty int64 list (axes, pads) is a compile-time value, not a tensor a step runs.
  auto b = OnnxBuilder::mlp();
  auto& empty = intWeight(b, "no_axes", {});
  empty.set_dims(0, 0);
  EXPECT_NO_THROW(importOnnxModel(b.model(), {}));
}

TEST(OnnxBadInput, NegativeDimension) {
  OnnxBuilder b;
  b.input("x", {-1, 4});
  b.model()
      .mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(1)
      ->set_dim_value(-3);
  b.node("Relu", {"x"}, "y");
  b.output("y");
  EXPECT_ERROR(modelError(b.model(), "negative_dim"), ErrorKind::kInvalidInput,
               "tensor 'x' has shape [32,-3] with a negative dimension");
}

TEST(OnnxBadInput, SymbolicNonBatchDimension) {
  OnnxBuilder b;
  b.input("x", {-1, -1});  // both symbolic: only the leading one resolves (to the batch)
  b.node("Relu", {"x"}, "y");
  b.output("y");
  EXPECT_ERROR(modelError(b.model(), "symbolic_dim"), ErrorKind::kUnsupported,
               "graph input 'x' has a symbolic dimension 1 ('batch')");
}

// --- tensors above 2^40 elements, and int64 overflow

TEST(OnnxBadInput, HugeInput) {
  OnnxBuilder b;
  b.input("x", {-1, int64_t{1} << 20, int64_t{1} << 20});  // 32 x 2^40
  b.node("Relu", {"x"}, "y");
  b.output("y");
  EXPECT_ERROR(modelError(b.model(), "huge_input"), ErrorKind::kInvalidInput,
               "tensor 'x' has shape [32,1048576,1048576] of 35184372088832 elements, above the 2^40");
}

TEST(OnnxBadInput, HugeInitializer) {
  OnnxBuilder b;
  b.input("x", {-1, 4});
  shapeOnlyWeight(b, "w", {4, int64_t{1} << 39});  // 2^41
  b.node("MatMul", {"x", "w"}, "y");
  b.output("y");
  EXPECT_ERROR(modelError(b.model(), "huge_weight"), ErrorKind::kInvalidInput,
               "tensor 'w' has shape [4,549755813888] of 2199023255552 elements");
}

TEST(OnnxBadInput, HugeMatMulOutput) {
  // [2^21, 2^10] x [2^10, 2^20]: each operand is within the limit, the [2^21, 2^20] product is not.
  OnnxBuilder b;
  b.input("x", {int64_t{1} << 21, 1024});
  shapeOnlyWeight(b, "w", {1024, int64_t{1} << 20});
  b.node("MatMul", {"x", "w"}, "y");
  b.output("y");
  const Error error = modelError(b.model(), "huge_matmul");
  EXPECT_ERROR(error, ErrorKind::kInvalidInput, "node 'y_node' (MatMul)");
  EXPECT_ERROR(error, ErrorKind::kInvalidInput, "of 2199023255552 elements, above the 2^40");
}

TEST(OnnxBadInput, HugeExpand) {
  OnnxBuilder b;
  b.input("x", {1, 1});
  intWeight(b, "shape", {int64_t{1} << 30, int64_t{1} << 30});
  b.node("Expand", {"x", "shape"}, "y");
  b.output("y");
  const Error error = modelError(b.model(), "huge_expand");
  EXPECT_ERROR(error, ErrorKind::kInvalidInput, "node 'y_node' (Expand)");
  EXPECT_ERROR(error, ErrorKind::kInvalidInput, "of 1152921504606846976 elements");
}

TEST(OnnxBadInput, DimensionProductOverflowsInt64) {
  // 2^32 x 2^32 = 2^64 wraps to 0 in int64: it must not pass as an empty tensor.
  OnnxBuilder b;
  b.input("x", {1, 1});
  intWeight(b, "shape", {int64_t{1} << 32, int64_t{1} << 32});
  b.node("Expand", {"x", "shape"}, "y");
  b.output("y");
  EXPECT_ERROR(modelError(b.model(), "overflow_expand"), ErrorKind::kInvalidInput, "the product overflows int64");

  OnnxBuilder input;
  input.input("x", {int64_t{1} << 32, int64_t{1} << 32});
  input.node("Relu", {"x"}, "y");
  input.output("y");
  EXPECT_ERROR(modelError(input.model(), "overflow_input"), ErrorKind::kInvalidInput, "overflows int64");
}

// Found by fuzz/onnx_fuzz (docs/reliability.md, "Fuzzing"), its input committed: a Reshape
// whose constant shape's dimensions multiply past int64. The product was a signed overflow
// (undefined behaviour; UBSan stopped on it) before any size check saw the shape.
TEST(OnnxBadInput, ReshapeShapeProductOverflowsInt64) {
  const std::string path = std::string(TPUSIM_SOURCE_DIR) + "/tests/data/fuzz/onnx_reshape_overflow.onnx";
  const Error error = fileError(path);
  EXPECT_EQ(error.kind(), ErrorKind::kInvalidInput);
  EXPECT_NE(std::string(error.what()).find("the shape's dimensions multiply past 2^63"), std::string::npos)
      << error.what();
}

// Found by fuzz/onnx_fuzz on 2026-12-08, its input committed: a Pad of -2^63 before one
// dimension. Its negation (the rows to cut) was a signed overflow; UBSan stopped on it.
TEST(OnnxBadInput, PadOfInt64MinIsAnError) {
  const std::string path = std::string(TPUSIM_SOURCE_DIR) + "/tests/data/fuzz/onnx_pad_int64_min.onnx";
  const Error error = fileError(path);
  EXPECT_NE(error.kind(), ErrorKind::kInternal) << error.what();
  EXPECT_NE(std::string(error.what()).find("negative padding leaves dimension"), std::string::npos) << error.what();
}

TEST(OnnxBadInput, HugeConstantNode) {
  OnnxBuilder b;
  b.input("x", {-1, 4});
  auto& constant = b.node("Constant", {}, "c");
  auto* attr = constant.add_attribute();
  attr->set_name("value");
  attr->set_type(onnx::AttributeProto::TENSOR);
  attr->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  attr->mutable_t()->add_dims(int64_t{1} << 32);
  attr->mutable_t()->add_dims(int64_t{1} << 32);
  b.node("Add", {"x", "c"}, "y");
  b.output("y");
  const Error error = modelError(b.model(), "huge_constant");
  EXPECT_ERROR(error, ErrorKind::kInvalidInput, "node 'c_node' (Constant)");
  EXPECT_ERROR(error, ErrorKind::kInvalidInput, "overflows int64");
}

TEST(OnnxBadInput, HugeCompileTimeValues) {
  OnnxBuilder b;
  b.input("x", {-1, 4});
  intWeight(b, "shape", {int64_t{1} << 20, int64_t{1} << 20});
  b.node("ConstantOfShape", {"shape"}, "c");
  b.node("Add", {"x", "c"}, "y");
  b.output("y");
  const Error error = modelError(b.model(), "huge_constant_of_shape");
  EXPECT_ERROR(error, ErrorKind::kUnsupported, "node 'c_node' (ConstantOfShape)");
  EXPECT_ERROR(error, ErrorKind::kUnsupported, "above the 2^26 tpusim evaluates while compiling");

  OnnxBuilder range;
  range.input("x", {-1, 4});
  auto scalar = [&](const std::string& name, int64_t v) { intWeight(range, name, {v}).clear_dims(); };
  scalar("start", 0);
  scalar("limit", int64_t{1} << 62);
  scalar("delta", 1);
  range.node("Range", {"start", "limit", "delta"}, "r");
  range.node("Add", {"x", "r"}, "y");
  range.output("y");
  EXPECT_ERROR(modelError(range.model(), "huge_range"), ErrorKind::kUnsupported, "node 'r_node' (Range)");
}

// --- opsets and domains

TEST(OnnxBadInput, OpsetNewerThanKnown) {
  auto b = OnnxBuilder::mlp();
  b.model().mutable_opset_import(0)->set_version(99);
  EXPECT_ERROR(modelError(b.model(), "opset99"), ErrorKind::kUnsupported, "opset 99 is newer than 21");
}

TEST(OnnxBadInput, OpsetOlderThanRead) {
  auto b = OnnxBuilder::mlp();
  b.model().mutable_opset_import(0)->set_version(9);
  EXPECT_ERROR(modelError(b.model(), "opset9"), ErrorKind::kUnsupported, "opset 9 is older than 13");
}

TEST(OnnxBadInput, NoOpsetImport) {
  auto b = OnnxBuilder::mlp();
  b.model().clear_opset_import();
  EXPECT_ERROR(modelError(b.model(), "no_opset"), ErrorKind::kInvalidInput, "imports no default-domain opset");
}

TEST(OnnxBadInput, UnknownDomainOnANode) {
  auto b = OnnxBuilder::mlp();
  b.model().mutable_graph()->mutable_node(1)->set_domain("com.example");
  auto* import = b.model().add_opset_import();
  import->set_domain("com.example");
  import->set_version(1);
  EXPECT_ERROR(modelError(b.model(), "domain"), ErrorKind::kUnsupported,
               "node 'a1_node' (Relu): domain 'com.example' is not supported");
}

// --- malformed tensors, inputs and nodes

TEST(OnnxBadInput, RawDataSizeDoesNotMatchShape) {
  OnnxBuilder b;
  b.input("x", {-1, 4});
  auto* init = b.model().mutable_graph()->add_initializer();
  init->set_name("w");
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_dims(4);
  init->add_dims(2);
  init->set_raw_data(std::string(30, '\0'));  // 4 x 2 floats are 32 bytes
  b.node("MatMul", {"x", "w"}, "y");
  b.output("y");
  EXPECT_ERROR(modelError(b.model(), "raw_size"), ErrorKind::kInvalidInput,
               "tensor 'w' has 30 bytes of raw data, expected 32");
}

TEST(OnnxBadInput, TypedDataCountDoesNotMatchShape) {
  OnnxBuilder b;
  b.input("x", {-1, 4}).weight("w", {4, 2});
  b.model().mutable_graph()->mutable_initializer(0)->add_float_data(1.0f);
  b.node("MatMul", {"x", "w"}, "y");
  b.output("y");
  EXPECT_ERROR(modelError(b.model(), "typed_count"), ErrorKind::kInvalidInput,
               "tensor 'w' has 9 values, its shape needs 8");
}

TEST(OnnxBadInput, InputWithoutTypeOrShape) {
  OnnxBuilder b;
  b.model().mutable_graph()->add_input()->set_name("x");
  b.node("Relu", {"x"}, "y");
  b.output("y");
  EXPECT_ERROR(modelError(b.model(), "no_type"), ErrorKind::kInvalidInput, "graph input 'x' has no type");

  OnnxBuilder no_shape;
  no_shape.input("x", {});
  no_shape.model().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  no_shape.node("Relu", {"x"}, "y");
  no_shape.output("y");
  EXPECT_ERROR(modelError(no_shape.model(), "no_shape"), ErrorKind::kInvalidInput, "graph input 'x' has no shape");

  OnnxBuilder no_elem;
  no_elem.input("x", {-1, 4}, onnx::TensorProto::UNDEFINED);
  no_elem.node("Relu", {"x"}, "y");
  no_elem.output("y");
  EXPECT_ERROR(modelError(no_elem.model(), "no_elem"), ErrorKind::kInvalidInput, "graph input 'x' has no element type");
}

TEST(OnnxBadInput, MissingRequiredInputName) {
  OnnxBuilder b;
  b.input("x", {-1, 4}).weight("w", {4, 2});
  b.node("MatMul", {"x", ""}, "y");
  b.output("y");
  EXPECT_ERROR(modelError(b.model(), "empty_input"), ErrorKind::kInvalidInput,
               "node 'y_node' (MatMul) leaves a required input unnamed");
}

TEST(OnnxBadInput, NodeWithoutInputsOrOutputs) {
  OnnxBuilder b;
  b.input("x", {-1, 4});
  b.node("Relu", {}, "y");
  b.output("y");
  EXPECT_ERROR(modelError(b.model(), "no_inputs"), ErrorKind::kInvalidInput, "node 'y_node' (Relu) has no inputs");

  OnnxBuilder no_out;
  no_out.input("x", {-1, 4});
  no_out.node("Relu", {"x"}, "y").clear_output();
  no_out.output("x");
  EXPECT_ERROR(modelError(no_out.model(), "no_outputs"), ErrorKind::kInvalidInput, "(Relu) has no outputs");
}

TEST(OnnxBadInput, DuplicateOutputNames) {
  OnnxBuilder b;
  b.input("x", {-1, 4});
  b.node("Relu", {"x"}, "y");
  b.node("Neg", {"x"}, "y").set_name("second");
  b.output("y");
  EXPECT_ERROR(modelError(b.model(), "duplicate_output"), ErrorKind::kInvalidInput,
               "node 'second' (Neg) redefines value 'y'");

  OnnxBuilder shadow;  // a node output that reuses a graph input's name
  shadow.input("x", {-1, 4});
  shadow.node("Relu", {"x"}, "x");
  shadow.output("x");
  EXPECT_ERROR(modelError(shadow.model(), "shadow_input"), ErrorKind::kInvalidInput, "redefines value 'x'");
}

TEST(OnnxBadInput, GraphOutputsMustBeProducedAndNamed) {
  auto b = OnnxBuilder::mlp();
  b.output("nowhere");
  EXPECT_ERROR(modelError(b.model(), "unproduced_output"), ErrorKind::kInvalidInput,
               "graph output 'nowhere' uses 'nowhere', which no earlier node produces");
  auto unnamed = OnnxBuilder::mlp();
  unnamed.output("");
  EXPECT_ERROR(modelError(unnamed.model(), "unnamed_output"), ErrorKind::kInvalidInput, "a graph output has no name");
}

TEST(OnnxBadInput, NamesMustBeUtf8) {
  // A corrupted byte in a name; the message says where without echoing the bytes.
  auto b = OnnxBuilder::mlp();
  b.model().mutable_graph()->mutable_node(1)->set_output(0, "a\xff");
  const Error error = modelError(b.model(), "bad_utf8");
  EXPECT_ERROR(error, ErrorKind::kInvalidInput, "the output name of node #1 is not valid UTF-8");
  EXPECT_EQ(std::string(error.what()).find('\xff'), std::string::npos);
  for (const std::string good : {"caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"}) {  // é, €, an emoji
    auto ok = OnnxBuilder::mlp();
    ok.model().mutable_graph()->mutable_node(1)->set_name(good);
    EXPECT_NO_THROW(importOnnxModel(ok.model(), {})) << good;
  }
  for (const std::string bad : {"\xc0\xaf", "\xed\xa0\x80", "\xe2\x82", "\xf4\x90\x80\x80"}) {
    auto no = OnnxBuilder::mlp();  // overlong, a surrogate, cut short, above U+10FFFF
    no.model().mutable_graph()->mutable_node(1)->set_name(bad);
    EXPECT_THROW(importOnnxModel(no.model(), {}), Error);
  }
}

TEST(OnnxBadInput, CyclicGraphNamesTheNode) {
  OnnxBuilder b;
  b.input("x", {-1, 4});
  b.node("Relu", {"y"}, "z");
  b.node("Relu", {"z"}, "y");
  b.output("y");
  EXPECT_ERROR(modelError(b.model(), "cyclic"), ErrorKind::kInvalidInput,
               "node 'z_node' (Relu) uses 'y', which no earlier node produces");
}

TEST(OnnxBadInput, InconsistentShapesNameTheNode) {
  OnnxBuilder b;
  b.input("x", {-1, 16}).weight("w", {8, 8});
  b.node("MatMul", {"x", "w"}, "y");
  b.output("y");
  const Error error = modelError(b.model(), "shape_mismatch");
  EXPECT_ERROR(error, ErrorKind::kInvalidInput, "node 'y_node' (MatMul)");
  EXPECT_ERROR(error, ErrorKind::kInvalidInput, "contracting dimensions differ");
}

}  // namespace
}  // namespace tpusim
