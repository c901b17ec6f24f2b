#include "frontend/passes/tensor_parallel.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "frontend/passes/all_reduce_insertion.hpp"
#include "frontend/passes/split_propagation.hpp"
#include "sim/common/error.hpp"

namespace tpusim {

namespace {

using ir::OpType;
using ir::Shape;

bool isWeight(const ir::Graph& graph, int tensor) {
  return graph.producer(tensor) == nullptr && graph.tensor(tensor).role == ir::TensorRole::kWeight;
}

// The weight a matmul operand is: the weight itself, or the weight cast to the compute dtype
// of a mixed-precision policy (frontend/train/precision_policy.hpp); -1 otherwise.
int weightBehind(const ir::Graph& graph, int tensor) {
  if (isWeight(graph, tensor)) return tensor;
  const ir::Op* cast = graph.producer(tensor);
  if (cast != nullptr && cast->type == OpType::kCast && isWeight(graph, cast->inputs[0])) return cast->inputs[0];
  return -1;
}

// A forward matmul of an activation by a weight (its rhs).
struct WeightMatmul {
  size_t op;
  int activation;
  int weight;
  int columns_axis;  // the weight's output-column axis
};

std::vector<WeightMatmul> weightMatmuls(const ir::Graph& graph) {
  std::vector<WeightMatmul> found;
  for (size_t i = 0; i < graph.ops().size(); ++i) {
    const ir::Op& op = graph.ops()[i];
    if (op.type != OpType::kMatMul || graph.tensor(op.outputs[0]).role != ir::TensorRole::kActivation) continue;
    const int weight = weightBehind(graph, op.inputs[1]);
    if (weight < 0 || weightBehind(graph, op.inputs[0]) >= 0) continue;
    const int rank = static_cast<int>(graph.tensor(weight).shape.size());
    found.push_back({i, op.inputs[0], weight, op.transpose_b ? rank - 2 : rank - 1});
  }
  return found;
}

// A column split that reaches the softmax cross-entropy splits a head: worth its
// backward all-reduce for an LM head (as many classes as the width it reads, or more), not
// for a classifier (the MLP's 10 classes from 512 features), which stays replicated.
bool splitsASmallHead(const ir::Graph& graph, const SplitPlan& plan, const WeightMatmul& head) {
  const bool into_loss = std::any_of(plan.partial_ops.begin(), plan.partial_ops.end(),
                                     [&](size_t op) { return graph.ops()[op].type == OpType::kSoftmaxCrossEntropy; });
  if (!into_loss) return false;
  const Shape& w = graph.tensor(head.weight).shape;
  const int64_t classes = w[static_cast<size_t>(head.columns_axis)];
  const int64_t width = w[static_cast<size_t>(head.columns_axis == 0 ? 1 : 0)];
  return classes < width;
}

// An embedding table worth splitting by rows (Megatron-LM's vocabulary-parallel
// embedding): looked up by ids the data supplies (a graph input), with more rows than
// columns. Not BERT's 2 token types, nor position embeddings looked up by positions the
// model computes: splitting those would all-reduce every lookup to save little memory.
bool isVocabulary(const ir::Graph& graph, int table, int indices) {
  const Shape& shape = graph.tensor(table).shape;
  const ir::TensorRole role = graph.tensor(indices).role;  // a language model's ids are also its labels
  const bool data_ids =
      graph.producer(indices) == nullptr && (role == ir::TensorRole::kInput || role == ir::TensorRole::kLabel);
  return data_ids && shape.size() == 2 && shape[0] > shape[1];
}

// The graph with every split tensor's split dimension divided by tp.
ir::Graph applySplits(const ir::Graph& graph, const SplitPlan& plan, int64_t tp) {
  ir::Graph split = graph;
  for (const ir::Tensor& t : graph.tensors()) {
    const int a = plan.axis[static_cast<size_t>(t.id)];
    if (a < 0) continue;
    Shape shape = t.shape;
    shape[static_cast<size_t>(a)] /= tp;
    split.setShape(t.id, std::move(shape));
  }
  for (size_t i = 0; i < graph.ops().size(); ++i) {
    const ir::Op& op = graph.ops()[i];
    if (op.type != OpType::kSlice && op.type != OpType::kSliceGrad) continue;
    const int a = plan.axis[static_cast<size_t>(op.inputs[0])];
    if (a >= 0) split.annotate(i).starts[static_cast<size_t>(a)] /= tp;
  }
  std::vector<int> partial;
  for (const size_t op : plan.partial_ops) partial.push_back(graph.ops()[op].outputs[0]);
  return allReduceAfterProducers(split, partial, tp, 1, ".tp_all_reduce", std::nullopt, std::nullopt);
}

}  // namespace

ir::Graph splitTensorParallel(const ir::Graph& graph, int64_t tp, TensorParallelSplit* split) {
  if (tp <= 1) return graph;
  const std::vector<WeightMatmul> matmuls = weightMatmuls(graph);
  std::map<int, int> seeds;  // accepted column splits: weight -> axis
  SplitPlan plan;
  plan.axis.assign(graph.tensors().size(), kWholeTensor);
  std::vector<bool> tried(matmuls.size(), false);
  std::optional<SplitFailure> first_failure;
  for (size_t i = 0; i < matmuls.size(); ++i) {
    if (tried[i] || plan.axis[static_cast<size_t>(matmuls[i].activation)] >= 0) continue;
    // Every matmul of the same activation, tried together.
    std::map<int, int> trial = seeds;
    for (size_t j = i; j < matmuls.size(); ++j) {
      if (matmuls[j].activation != matmuls[i].activation) continue;
      tried[j] = true;
      trial[matmuls[j].weight] = matmuls[j].columns_axis;
    }
    SplitFailure failure;
    std::optional<SplitPlan> accepted = propagateSplits(graph, tp, trial, &failure);
    if (accepted && splitsASmallHead(graph, *accepted, matmuls[i])) continue;
    if (accepted) {
      seeds = std::move(trial);
      plan = std::move(*accepted);
    } else if (!first_failure) {
      first_failure = failure;
    }
  }
  // Then the vocabularies, split by rows, each on its own.
  std::vector<std::string> vocabulary;
  for (const ir::Op& op : graph.ops()) {
    if (op.type != OpType::kGather || op.axis != 0) continue;
    const int table = weightBehind(graph, op.inputs[0]);
    if (table < 0 || seeds.count(table) || plan.axis[static_cast<size_t>(table)] >= 0) continue;
    if (!isVocabulary(graph, table, op.inputs[1])) continue;
    std::map<int, int> trial = seeds;
    trial[table] = 0;
    SplitFailure failure;
    if (std::optional<SplitPlan> accepted = propagateSplits(graph, tp, trial, &failure)) {
      seeds = std::move(trial);
      plan = std::move(*accepted);
      vocabulary.push_back(op.name);
    } else if (!first_failure) {
      first_failure = failure;
    }
  }
  if (seeds.empty()) {
    std::string why = "it has no matmul by a weight";
    if (first_failure) {
      why = (first_failure->op.empty() ? "" : "op '" + first_failure->op + "': ") + first_failure->reason;
    }
    throw Error(ErrorKind::kUnsupported,
                "tensor parallel over " + std::to_string(tp) + " chips: no matmul pair splits evenly (" + why + ")");
  }
  if (split != nullptr) {
    split->vocabulary = vocabulary;
    for (const WeightMatmul& m : matmuls) {
      const ir::Op& op = graph.ops()[m.op];
      const int weight_axis = plan.axis[static_cast<size_t>(m.weight)];
      if (weight_axis < 0) {
        split->replicated.push_back(op.name);
      } else if (weight_axis == m.columns_axis) {
        split->column.push_back(op.name);
      } else {
        split->row.push_back(op.name);
      }
    }
  }
  return applySplits(graph, plan, tp);
}

}  // namespace tpusim
