// Builds small ONNX models in memory for frontend tests.
#pragma once

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace tpusim::testing {

inline void setFloatAttribute(onnx::NodeProto& node, const std::string& name, float value) {
  auto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::FLOAT);
  attr->set_f(value);
}

inline void setIntAttribute(onnx::NodeProto& node, const std::string& name, int64_t value) {
  auto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INT);
  attr->set_i(value);
}

class OnnxBuilder {
 public:
  explicit OnnxBuilder(int64_t opset = 17) {
    m_model.set_ir_version(8);
    auto* import = m_model.add_opset_import();
    import->set_domain("");
    import->set_version(opset);
    m_model.mutable_graph()->set_name("test");
  }

  // dims < 0 are symbolic ("batch").
  OnnxBuilder& input(const std::string& name, std::vector<int64_t> dims, int32_t type = onnx::TensorProto::FLOAT) {
    auto* value = m_model.mutable_graph()->add_input();
    value->set_name(name);
    auto* tensor = value->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(type);
    for (int64_t dim : dims) {
      auto* d = tensor->mutable_shape()->add_dim();
      if (dim < 0) {
        d->set_dim_param("batch");
      } else {
        d->set_dim_value(dim);
      }
    }
    return *this;
  }
  // Zeros, FLOAT or DOUBLE.
  OnnxBuilder& weight(const std::string& name, std::vector<int64_t> dims, int32_t type = onnx::TensorProto::FLOAT) {
    auto* init = m_model.mutable_graph()->add_initializer();
    init->set_name(name);
    init->set_data_type(type);
    int64_t count = 1;
    for (int64_t dim : dims) {
      init->add_dims(dim);
      count *= dim;
    }
    for (int64_t i = 0; i < count; ++i) {
      if (type == onnx::TensorProto::DOUBLE) {
        init->add_double_data(0.0);
      } else {
        init->add_float_data(0.0f);
      }
    }
    return *this;
  }
  onnx::NodeProto& node(const std::string& op, std::vector<std::string> inputs, const std::string& output) {
    auto* node = m_model.mutable_graph()->add_node();
    node->set_op_type(op);
    node->set_name(output + "_node");
    for (const auto& input : inputs) node->add_input(input);
    node->add_output(output);
    return *node;
  }
  OnnxBuilder& gemm(const std::string& x, const std::string& w, const std::string& b, const std::string& out) {
    auto& n = node("Gemm", {x, w, b}, out);
    auto* attr = n.add_attribute();
    attr->set_name("transB");
    attr->set_type(onnx::AttributeProto::INT);
    attr->set_i(1);
    return *this;
  }
  OnnxBuilder& output(const std::string& name) {
    m_model.mutable_graph()->add_output()->set_name(name);
    return *this;
  }

  // x[batch, 16] -> Gemm(8) -> Relu -> Gemm(4) -> logits
  static OnnxBuilder mlp() {
    OnnxBuilder b;
    b.input("x", {-1, 16}).weight("w1", {8, 16}).weight("b1", {8}).weight("w2", {4, 8}).weight("b2", {4});
    b.gemm("x", "w1", "b1", "h1");
    b.node("Relu", {"h1"}, "a1");
    b.gemm("a1", "w2", "b2", "logits");
    b.output("logits");
    return b;
  }

  // mlp() ending in SoftmaxCrossEntropyLoss against int64 labels[batch]; output "loss".
  static OnnxBuilder mlpWithLoss() {
    OnnxBuilder b = mlp();
    b.input("labels", {-1}, onnx::TensorProto::INT64);
    b.node("SoftmaxCrossEntropyLoss", {"logits", "labels"}, "loss");
    b.m_model.mutable_graph()->clear_output();
    b.output("loss");
    return b;
  }

  onnx::ModelProto& model() { return m_model; }

 private:
  onnx::ModelProto m_model;
};

}  // namespace tpusim::testing
