// The IR ops added for HLO import on the CPU executor, with hand-computed
// values: Maximum and Minimum (NaN propagates), Compare, Reduce max/min,
// AllReduce of one replica, and the gradients of Maximum and Reduce max.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "frontend/train/training_graph.hpp"
#include "reference/cpu/cpu_executor.hpp"
#include "sim/common/error.hpp"

namespace tpusim::reference {
namespace {

using ir::CompareDirection;
using ir::OpType;
using ir::Reduction;
using ir::TensorValue;

TensorValue floats(ir::Shape shape, std::vector<float> values) {
  return {shape, DType::kF32, std::vector<double>(values.begin(), values.end()), {}};
}
TensorValue ints(ir::Shape shape, std::vector<int64_t> values, DType dtype = DType::kInt32) {
  return {shape, dtype, {}, values};
}

TEST(MaxCompareOps, ElementwiseMaximumMinimumBroadcastAndPropagateNan) {
  ir::Graph g;
  const int a = g.addInput("a", {2, 3}, DType::kF32, ir::TensorRole::kInput);
  const int b = g.addInput("b", {3}, DType::kF32, ir::TensorRole::kInput);
  const int mx = g.binary(OpType::kMaximum, "max", a, b);
  const int mn = g.binary(OpType::kMinimum, "min", a, b);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto values =
      CpuExecutor(g, {}).run({{"a", floats({2, 3}, {1, -2, 3, nan, 5, -6})}, {"b", floats({3}, {0, 0, 4})}});
  const std::vector<double>& x = values[static_cast<size_t>(mx)].floats;
  const std::vector<double>& n = values[static_cast<size_t>(mn)].floats;
  EXPECT_EQ(x[0], 1);
  EXPECT_EQ(x[1], 0);
  EXPECT_EQ(x[2], 4);
  EXPECT_TRUE(std::isnan(x[3]));
  EXPECT_EQ(x[4], 5);
  EXPECT_EQ(x[5], 4);
  EXPECT_EQ(n[0], 0);
  EXPECT_EQ(n[1], -2);
  EXPECT_TRUE(std::isnan(n[3]));
  EXPECT_EQ(n[5], -6);
}

TEST(MaxCompareOps, CompareGivesBoolForEveryDirection) {
  ir::Graph g;
  const int a = g.addInput("a", {4}, DType::kInt32, ir::TensorRole::kInput);
  const int b = g.addInput("b", {}, DType::kInt32, ir::TensorRole::kInput);
  std::vector<int> outs;
  for (CompareDirection d : {CompareDirection::kEq, CompareDirection::kNe, CompareDirection::kLt, CompareDirection::kLe,
                             CompareDirection::kGt, CompareDirection::kGe}) {
    outs.push_back(g.compare(d, std::string("cmp") + ir::compareDirectionName(d), a, b));
  }
  EXPECT_EQ(g.tensor(outs[0]).dtype, DType::kBool);
  const auto values = CpuExecutor(g, {}).run({{"a", ints({4}, {1, 2, 3, 2})}, {"b", ints({}, {2})}});
  const std::vector<std::vector<int64_t>> expected = {{0, 1, 0, 1}, {1, 0, 1, 0}, {1, 0, 0, 0},
                                                      {1, 1, 0, 1}, {0, 0, 1, 0}, {0, 1, 1, 1}};
  for (size_t i = 0; i < outs.size(); ++i) EXPECT_EQ(values[static_cast<size_t>(outs[i])].ints, expected[i]) << i;
  EXPECT_THROW(g.compare(CompareDirection::kEq, "mixed", a, g.addInput("f", {4}, DType::kF32, ir::TensorRole::kInput)),
               Error);
}

TEST(MaxCompareOps, ReduceMaxAndMinOverAxes) {
  ir::Graph g;
  const int x = g.addInput("x", {2, 3}, DType::kF32, ir::TensorRole::kInput);
  const int rows = g.reduce("rows", x, Reduction::kMax, {1}, false);
  const int cols = g.reduce("cols", x, Reduction::kMin, {0}, true);
  const int all = g.reduce("all", x, Reduction::kMax, {}, false);
  const int i = g.addInput("i", {3}, DType::kInt64, ir::TensorRole::kInput);
  const int imin = g.reduce("imin", i, Reduction::kMin, {0}, false);
  EXPECT_EQ(g.tensor(cols).shape, (ir::Shape{1, 3}));
  EXPECT_THROW(g.reduce("isum", i, Reduction::kSum, {0}, false), Error);  // sums stay float-only
  const auto values = CpuExecutor(g, {}).run(
      {{"x", floats({2, 3}, {1, 7, -3, 4, -5, 6})}, {"i", ints({3}, {5, -9, 2}, DType::kInt64)}});
  EXPECT_EQ(values[static_cast<size_t>(rows)].floats, (std::vector<double>{7, 6}));
  EXPECT_EQ(values[static_cast<size_t>(cols)].floats, (std::vector<double>{1, -5, -3}));
  EXPECT_EQ(values[static_cast<size_t>(all)].floats, (std::vector<double>{7}));
  EXPECT_EQ(values[static_cast<size_t>(imin)].ints, (std::vector<int64_t>{-9}));
}

TEST(MaxCompareOps, AllReduceOfOneReplicaIsTheIdentityAndMoreNeedThatManyReplicas) {
  ir::Graph g;
  const int x = g.addInput("x", {3}, DType::kF32, ir::TensorRole::kInput);
  const int y = g.allReduce("ar", x, Reduction::kSum, 1);
  const auto values = CpuExecutor(g, {}).run({{"x", floats({3}, {1, 2, 3})}});
  EXPECT_EQ(values[static_cast<size_t>(y)].floats, (std::vector<double>{1, 2, 3}));
  // A group of four needs four replicas (CpuExecutor::runReplicas; cpu_replicas_test.cpp).
  g.allReduce("ar4", x, Reduction::kSum, 4);
  try {
    CpuExecutor(g, {}).run({{"x", floats({3}, {1, 2, 3})}});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(error.what()).find("all-reduce across 4 replicas, and the CPU reference runs 1"),
              std::string::npos);
  }
}

// logits = max(x, w) + reduce-max: the loss gradient reaches w only where w won.
TEST(MaxCompareOps, GradientsGoToTheChosenSide) {
  ImportedModel model;
  ir::Graph& g = model.graph;
  const int x = g.addInput("x", {2, 3}, DType::kF32, ir::TensorRole::kInput);
  const int w = g.addWeight("w", {2, 3}, DType::kF32);
  const int m = g.binary(OpType::kMaximum, "max", x, w);
  const int r = g.reshape("r", g.reduce("rmax", w, Reduction::kMax, {1}, true), {2, 1});
  g.markOutput(g.add("logits", m, r));
  const ir::Graph training = buildTrainingGraph(model, TrainingOptions{1.0});
  const std::vector<float> xv = {0, 5, 0, 5, 0, 0};
  const std::vector<float> wv = {1, 2, 3, 1, 4, 2};  // w wins at 0, 2 (row 0) and 4, 5 (row 1)
  const auto values =
      CpuExecutor(training, {})
          .run({{"x", floats({2, 3}, xv)}, {"w", floats({2, 3}, wv)}, {"labels", ints({2}, {0, 1}, DType::kInt64)}});
  // dlogits = (softmax(logits) - onehot) / 2, computed here in double.
  const std::vector<double> logits = {1 + 3, 5 + 3, 3 + 3, 5 + 4, 4 + 4, 2 + 4};
  std::vector<double> d(6);
  for (int row = 0; row < 2; ++row) {
    double sum = 0;
    for (int c = 0; c < 3; ++c) sum += std::exp(logits[static_cast<size_t>(row * 3 + c)]);
    for (int c = 0; c < 3; ++c) {
      const size_t at = static_cast<size_t>(row * 3 + c);
      d[at] = (std::exp(logits[at]) / sum - (c == row ? 1.0 : 0.0)) / 2;
    }
  }
  // dw = dlogits where w chose the max, plus the row's sum of dlogits at the row max (w[0,2], w[1,1]).
  const std::vector<double> dw = {d[0], 0, d[2] + d[0] + d[1] + d[2], 0, d[4] + d[3] + d[4] + d[5], d[5]};
  int updated = -1;
  for (const ir::Tensor& t : training.tensors()) {
    if (t.name == "w:updated") updated = t.id;
  }
  ASSERT_GE(updated, 0);
  for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(values[static_cast<size_t>(updated)].floats[i], wv[i] - dw[i], 1e-6) << i;
}

}  // namespace
}  // namespace tpusim::reference
