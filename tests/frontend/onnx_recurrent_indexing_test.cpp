// The ONNX recurrent layers unrolled into per-step matmuls and vector ops, and the indexed
// gathers and scatters as flat-index Gathers and scatter-adds: their structure, their
// gradients, and their errors. Their values are checked against the ONNX node suite
// (tests/validation/onnx_node_suite_test.cpp) and PyTorch (tests/python/test_zoo_reference.py).
#include <gtest/gtest.h>

#include "frontend/import/onnx_import.hpp"
#include "frontend/train/training_graph.hpp"
#include "sim/common/error.hpp"
#include "tests/support/onnx_builder.hpp"
#include "tests/support/op_counts.hpp"

namespace tpusim {
namespace {

using testing::countOps;

std::string importError(onnx::ModelProto& model) {
  try {
    importOnnxModel(model, OnnxImportOptions{2});
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

void setStringAttribute(onnx::NodeProto& node, const std::string& name, const std::string& value) {
  auto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::STRING);
  attr->set_s(value);
}

// X [batch, steps, 3] (layout 1) through an LSTM (or GRU, RNN) of hidden size 4; outputs Y
// [batch, steps, directions, 4] and Y_h [batch, directions, 4].
testing::OnnxBuilder recurrent(const std::string& op, int64_t steps, int64_t directions, int64_t gates,
                               const std::string& w = "w") {
  testing::OnnxBuilder b;
  b.input("x", {-1, steps, 3});
  b.weight("w", {directions, gates * 4, 3}).weight("r", {directions, gates * 4, 4});
  b.weight("b", {directions, 2 * gates * 4});
  auto& node = b.node(op, {"x", w, "r", "b"}, "y");
  node.add_output("y_h");
  testing::setIntAttribute(node, "layout", 1);
  if (directions == 2) setStringAttribute(node, "direction", "bidirectional");
  b.output("y").output("y_h");
  return b;
}

// One matmul of the whole sequence by W per direction, then one of the state by R per step.
TEST(OnnxRecurrent, AnLstmIsOneInputMatmulAndOneRecurrentMatmulPerStep) {
  auto b = recurrent("LSTM", 5, 2, 4);
  const ImportedModel model = importOnnxModel(b.model(), OnnxImportOptions{2});
  const ir::Graph& g = model.graph;
  EXPECT_EQ(countOps(g, ir::OpType::kMatMul), 2 * (1 + 5));
  EXPECT_EQ(countOps(g, ir::OpType::kUnary), 2 * 5 * 5);  // 3 sigmoids and 2 tanh per step
  EXPECT_EQ(g.tensor(g.outputs()[0]).shape, (ir::Shape{2, 5, 2, 4}));
  EXPECT_EQ(g.tensor(g.outputs()[1]).shape, (ir::Shape{2, 2, 4}));
  for (const ir::Op& op : g.ops()) {
    if (op.type != ir::OpType::kMatMul) continue;
    EXPECT_TRUE(op.transpose_b) << op.name;  // x W^T and h R^T: the weights are read as stored
    const ir::Shape& a = g.tensor(op.inputs[0]).shape;
    EXPECT_EQ(a, (a[1] == 3 ? ir::Shape{5 * 2, 3} : ir::Shape{2, 4})) << op.name;
  }
}

// Without linear_before_reset the reset gate scales h before its matmul: two per step.
TEST(OnnxRecurrent, AGruResetsTheStateBeforeOrAfterItsMatmul) {
  auto before = recurrent("GRU", 3, 1, 3);
  EXPECT_EQ(countOps(importOnnxModel(before.model(), OnnxImportOptions{2}).graph, ir::OpType::kMatMul), 1 + 2 * 3);
  auto after = recurrent("GRU", 3, 1, 3);
  testing::setIntAttribute(*after.model().mutable_graph()->mutable_node(0), "linear_before_reset", 1);
  EXPECT_EQ(countOps(importOnnxModel(after.model(), OnnxImportOptions{2}).graph, ir::OpType::kMatMul), 1 + 2 * 3);
  auto rnn = recurrent("RNN", 4, 1, 1);
  EXPECT_EQ(countOps(importOnnxModel(rnn.model(), OnnxImportOptions{2}).graph, ir::OpType::kMatMul), 1 + 4);
}

// Training differentiates the unrolled steps: W, R and B each get their one update.
TEST(OnnxRecurrent, AnLstmTrainsThroughTime) {
  auto b = recurrent("LSTM", 4, 1, 4);
  b.model().mutable_graph()->clear_output();
  b.weight("head", {4, 3});
  b.node("MatMul", {"y_h", "head"}, "logits_3d");
  b.node("Reshape", {"logits_3d", "shape"}, "logits");
  auto* shape = b.model().mutable_graph()->add_initializer();
  shape->set_name("shape");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(2);
  shape->add_int64_data(2);
  shape->add_int64_data(3);
  b.output("logits");
  OnnxImportOptions options{2};
  options.training = true;
  const ImportedModel model = importOnnxModel(b.model(), options);
  const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{});
  EXPECT_EQ(countOps(graph, ir::OpType::kSgdUpdate), 4);  // w, r, b, head
}

TEST(OnnxRecurrent, BadShapesAndUnknownActivationsAreNamed) {
  auto wrong = recurrent("LSTM", 2, 1, 4, "r");  // R where W belongs: [1, 16, 4]
  std::string message = importError(wrong.model());
  EXPECT_NE(message.find("(LSTM): W has shape [1,16,4], expected [1,16,3]"), std::string::npos) << message;

  auto unknown = recurrent("RNN", 2, 1, 1);
  auto* activations = unknown.model().mutable_graph()->mutable_node(0)->add_attribute();
  activations->set_name("activations");
  activations->set_type(onnx::AttributeProto::STRINGS);
  activations->add_strings("Swish");
  message = importError(unknown.model());
  EXPECT_NE(message.find("(RNN): activation 'swish' is not supported"), std::string::npos) << message;

  auto direction = recurrent("GRU", 2, 1, 3);
  setStringAttribute(*direction.model().mutable_graph()->mutable_node(0), "direction", "sideways");
  message = importError(direction.model());
  EXPECT_NE(message.find("direction 'sideways' is not forward, reverse or bidirectional"), std::string::npos)
      << message;
}

// ScatterND as a scatter-add of the update rows, which trains the updates through a Gather.
TEST(OnnxIndexing, ScatterNdOfAWeightTrainsThroughAGather) {
  testing::OnnxBuilder b;
  b.input("x", {-1, 4, 3}).weight("rows", {2, 3});
  auto* indices = b.model().mutable_graph()->add_initializer();
  indices->set_name("indices");
  indices->set_data_type(onnx::TensorProto::INT64);
  indices->add_dims(2);
  indices->add_dims(2);
  for (int64_t v : {0, 1, 1, -1}) indices->add_int64_data(v);  // (0, 1) and (1, 3)
  b.node("ScatterND", {"x", "indices", "rows"}, "y");
  b.output("y");
  OnnxImportOptions options{2};
  const ImportedModel model = importOnnxModel(b.model(), options);
  EXPECT_EQ(countOps(model.graph, ir::OpType::kGatherGrad), 2);  // the updates, and where they land
  EXPECT_EQ(model.graph.tensor(model.graph.outputs()[0]).shape, (ir::Shape{2, 4, 3}));

  const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{});
  EXPECT_EQ(countOps(graph, ir::OpType::kSgdUpdate), 1);
  EXPECT_GE(countOps(graph, ir::OpType::kGather), 1);  // d updates = the rows of d out they were written to
}

TEST(OnnxIndexing, ARunTimeScatterWithAProductIsUnsupported) {
  testing::OnnxBuilder b;
  b.input("x", {4, 3}).input("updates", {1, 3});
  auto* indices = b.model().mutable_graph()->add_initializer();
  indices->set_name("indices");
  indices->set_data_type(onnx::TensorProto::INT64);
  indices->add_dims(1);
  indices->add_dims(1);
  indices->add_int64_data(2);
  setStringAttribute(b.node("ScatterND", {"x", "indices", "updates"}, "y"), "reduction", "mul");
  b.output("y");
  try {
    importOnnxModel(b.model(), {});
    FAIL() << "a mul scatter imported";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(error.what()).find("reduction 'mul' is not supported (none and add are)"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace tpusim
