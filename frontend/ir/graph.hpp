// The graph IR: tensors with static shapes and dtypes, and ops in
// topological order. Value-semantic and printable (Graph::toString).
//
// Ops are added through the typed builders below, which check operand shapes
// and infer the result's, so every Graph that exists is well formed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/common/dtype.hpp"

namespace tpusim::ir {

using Shape = std::vector<int64_t>;

int64_t elementCount(const Shape& shape);
std::string shapeToString(const Shape& shape);

enum class TensorRole { kInput, kLabel, kWeight, kActivation, kGradient, kLoss };
const char* tensorRoleName(TensorRole role);

struct Tensor {
  int id = -1;
  std::string name;
  Shape shape;
  DType dtype = DType::kF32;
  TensorRole role = TensorRole::kActivation;
  int alias_of = -1;  // an optimizer's updated weight names the weight it overwrites

  uint64_t bytes() const { return static_cast<uint64_t>(elementCount(shape)) * dtypeBytes(dtype); }
};

enum class OpType {
  kMatMul,                   // out = op(a) x op(b); op = optional transpose
  kAdd,                      // out = a + b; b equal in shape or a row vector broadcast over a's rows
  kRelu,                     // out = max(x, 0)
  kReluGrad,                 // dx = dy where x > 0, else 0 (inputs: dy, x)
  kSoftmaxCrossEntropy,      // loss = mean over rows of -log softmax(logits)[label]
  kSoftmaxCrossEntropyGrad,  // dlogits = (softmax(logits) - onehot(label)) / rows
  kReduceRows,               // out[n] = sum over m of x[m, n]
  kSgdUpdate,                // w' = w - learning_rate * g, written over w
};
const char* opTypeName(OpType type);

struct Op {
  std::string name;
  OpType type;
  std::vector<int> inputs;
  std::vector<int> outputs;
  bool transpose_a = false;  // MatMul
  bool transpose_b = false;  // MatMul
  double learning_rate = 0;  // SgdUpdate
};

class Graph {
 public:
  int addInput(const std::string& name, Shape shape, DType dtype, TensorRole role);
  int addWeight(const std::string& name, Shape shape, DType dtype);

  // Builders: check operands, infer the output, append the op, return the output id.
  int matmul(const std::string& name, int a, int b, bool transpose_a, bool transpose_b,
             TensorRole role = TensorRole::kActivation);
  int add(const std::string& name, int a, int b, TensorRole role = TensorRole::kActivation);
  int relu(const std::string& name, int x);
  int reluGrad(const std::string& name, int dy, int x);
  int softmaxCrossEntropy(const std::string& name, int logits, int labels);
  int softmaxCrossEntropyGrad(const std::string& name, int logits, int labels);
  int reduceRows(const std::string& name, int x, TensorRole role = TensorRole::kGradient);
  int sgdUpdate(const std::string& name, int weight, int gradient, double learning_rate);

  void markOutput(int tensor) { m_outputs.push_back(tensor); }
  // Gives an existing tensor a user-facing name (an ONNX value name, say).
  void rename(int tensor, const std::string& name) { m_tensors.at(static_cast<size_t>(tensor)).name = name; }

  const Tensor& tensor(int id) const { return m_tensors.at(static_cast<size_t>(id)); }
  const std::vector<Tensor>& tensors() const { return m_tensors; }
  const std::vector<Op>& ops() const { return m_ops; }
  const std::vector<int>& outputs() const { return m_outputs; }
  // The op that produces `tensor`, or nullptr for inputs and weights.
  const Op* producer(int tensor) const;

  std::string toString() const;

 private:
  int newTensor(const std::string& name, Shape shape, DType dtype, TensorRole role);
  int append(Op op, const std::string& out_name, Shape shape, DType dtype, TensorRole role);
  const Tensor& checked(int id, const std::string& op_name) const;

  std::vector<Tensor> m_tensors;
  std::vector<Op> m_ops;
  std::vector<int> m_outputs;
  std::vector<int> m_producer;  // per tensor: index into m_ops, or -1
};

}  // namespace tpusim::ir
