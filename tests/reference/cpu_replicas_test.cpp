// The CPU executor's data-parallel replicas (CpuExecutor::runReplicas): an AllReduce
// across them against hand-computed sums, a data-parallel SGD step against the
// one-replica steps it is made of, the timed form, and the groups it refuses.
#include <cmath>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include "frontend/passes/data_parallel.hpp"
#include "frontend/train/training_graph.hpp"
#include "reference/cpu/cpu_executor.hpp"
#include "sim/common/error.hpp"

namespace tpusim::reference {
namespace {

using ir::Reduction;
using ir::TensorValue;
using Feeds = std::map<std::string, TensorValue>;

TensorValue values(ir::Shape shape, DType dtype, std::vector<double> floats) {
  return {shape, dtype, floats, {}};
}

const TensorValue& valueOf(const std::vector<TensorValue>& replica, int id) {
  return replica[static_cast<size_t>(id)];
}

int idOf(const ir::Graph& graph, const std::string& name) {
  for (const ir::Tensor& t : graph.tensors()) {
    if (t.name == name) return t.id;
  }
  ADD_FAILURE() << "no tensor " << name;
  return 0;
}

TEST(CpuReplicas, AllReduceReducesAcrossTheReplicasAndEveryReplicaReadsTheResult) {
  ir::Graph g;
  const int x = g.addInput("x", {3}, DType::kF32, ir::TensorRole::kInput);
  const int sum = g.allReduce("sum", x, Reduction::kSum, 3);
  const int max = g.allReduce("max", x, Reduction::kMax, 3);
  const int min = g.allReduce("min", x, Reduction::kMin, 3);
  const int h = g.addInput("h", {2}, DType::kBF16, ir::TensorRole::kInput);
  const int hsum = g.allReduce("hsum", h, Reduction::kSum, 3);
  const int i = g.addInput("i", {2}, DType::kInt32, ir::TensorRole::kInput);
  const int isum = g.allReduce("isum", i, Reduction::kSum, 3);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double small = std::ldexp(1.0, -8);  // half of bf16's last place at 1
  const std::vector<Feeds> feeds = {{{"x", values({3}, DType::kF32, {1, 2, 3})},
                                     {"h", values({2}, DType::kBF16, {1, 3})},
                                     {"i", {{2}, DType::kInt32, {}, {2147483647, -7}}}},
                                    {{"x", values({3}, DType::kF32, {10, -20, nan})},
                                     {"h", values({2}, DType::kBF16, {small, 1})},
                                     {"i", {{2}, DType::kInt32, {}, {1, 3}}}},
                                    {{"x", values({3}, DType::kF32, {100, 200, 300})},
                                     {"h", values({2}, DType::kBF16, {small, 1})},
                                     {"i", {{2}, DType::kInt32, {}, {0, 4}}}}};
  const std::vector<std::vector<TensorValue>> replicas = CpuExecutor(g, {}).runReplicas(feeds);
  ASSERT_EQ(replicas.size(), 3u);
  for (const std::vector<TensorValue>& replica : replicas) {
    const std::vector<double>& s = valueOf(replica, sum).floats;
    EXPECT_EQ(s[0], 111);
    EXPECT_EQ(s[1], 182);
    EXPECT_TRUE(std::isnan(s[2]));
    EXPECT_EQ(valueOf(replica, max).floats[0], 100);
    EXPECT_EQ(valueOf(replica, max).floats[1], 200);
    EXPECT_TRUE(std::isnan(valueOf(replica, max).floats[2]));  // NaN propagates, as Maximum's does
    EXPECT_EQ(valueOf(replica, min).floats[1], -20);
    // 1 + 2^-8 + 2^-8 summed in float, rounded to bf16 once: 1 + 2^-7. (Rounding each
    // partial would tie 1 + 2^-8 to even, 1, twice.)
    EXPECT_EQ(valueOf(replica, hsum).floats, (std::vector<double>{1 + 2 * small, 5}));
    // int32's largest plus one wraps to its smallest, as the CPU's integer arithmetic does.
    EXPECT_EQ(valueOf(replica, isum).ints, (std::vector<int64_t>{-2147483648LL, 0}));
  }
  // Each replica's input is its own.
  EXPECT_EQ(valueOf(replicas[1], x).floats[0], 10);
}

// y = x w, softmax cross-entropy, SGD at `rate`, on two replicas with their own batches.
struct DataParallelSgd {
  static constexpr double rate = 0.5;
  ir::Graph single;
  ir::Graph parallel;
  TensorValue weights = values({3, 4}, DType::kF32, {0.5, -1, 2, 0.25, 1, 0, -0.5, 3, -2, 1.5, 0.75, -1});
  std::vector<Feeds> feeds = {{{"x", values({2, 3}, DType::kF32, {1, 2, 3, -1, 0.5, 2})},
                               {"w", weights},
                               {"labels", {{2}, DType::kInt64, {}, {0, 3}}}},
                              {{"x", values({2, 3}, DType::kF32, {0, -2, 1, 4, 1, -3})},
                               {"w", weights},
                               {"labels", {{2}, DType::kInt64, {}, {2, 2}}}}};
  DataParallelSgd() {
    ImportedModel model;
    ir::Graph& g = model.graph;
    const int x = g.addInput("x", {2, 3}, DType::kF32, ir::TensorRole::kInput);
    const int w = g.addWeight("w", {3, 4}, DType::kF32);
    g.markOutput(g.matmul("logits", x, w, false, false));
    single = buildTrainingGraph(model, TrainingOptions{rate});
    parallel = allReduceGradients(single, 2);
  }
};

// The data-parallel step's gradients are each replica's own, summed; both replicas apply
// the same update, w - rate (g0 + g1).
TEST(CpuReplicas, DataParallelSgdAppliesTheSummedGradientsOnEveryReplica) {
  const DataParallelSgd step;
  const ir::Graph& single = step.single;
  const ir::Graph& parallel = step.parallel;
  const std::vector<Feeds>& feeds = step.feeds;
  const TensorValue& weights = step.weights;
  const double rate = DataParallelSgd::rate;
  const std::vector<std::vector<TensorValue>> replicas = CpuExecutor(parallel, {}).runReplicas(feeds);
  const std::vector<TensorValue> alone0 = CpuExecutor(single, {}).run(feeds[0]);
  const std::vector<TensorValue> alone1 = CpuExecutor(single, {}).run(feeds[1]);
  int reduced = 0;
  for (const ir::Op& op : parallel.ops()) {
    if (op.type != ir::OpType::kAllReduce) continue;
    ++reduced;
    const std::string& gradient = parallel.tensor(op.inputs[0]).name;
    const std::vector<double>& g0 = valueOf(alone0, idOf(single, gradient)).floats;
    const std::vector<double>& g1 = valueOf(alone1, idOf(single, gradient)).floats;
    EXPECT_EQ(valueOf(replicas[0], op.inputs[0]).floats, g0);
    EXPECT_EQ(valueOf(replicas[1], op.inputs[0]).floats, g1);
    EXPECT_NE(g0, g1);
    for (size_t e = 0; e < g0.size(); ++e) {
      const float total = static_cast<float>(g0[e]) + static_cast<float>(g1[e]);
      EXPECT_EQ(valueOf(replicas[0], op.outputs[0]).floats[e], total) << e;
      const float updated = static_cast<float>(weights.floats[e]) - static_cast<float>(rate) * total;
      for (const std::vector<TensorValue>& replica : replicas) {
        EXPECT_FLOAT_EQ(static_cast<float>(valueOf(replica, idOf(parallel, "w:updated")).floats[e]), updated) << e;
      }
    }
  }
  EXPECT_EQ(reduced, 1);
}

TEST(CpuReplicas, ReleasingWhatIsNotKeptLeavesEveryReplicasKeptValues) {
  const DataParallelSgd step;
  const ir::Graph& parallel = step.parallel;
  const std::vector<Feeds>& feeds = step.feeds;
  const int updated = idOf(parallel, "w:updated");
  const auto every = CpuExecutor(parallel, {}).runReplicas(feeds);
  const auto kept = CpuExecutor(parallel, {}, std::vector<int>{updated}).runReplicas(feeds);
  const auto timed = CpuExecutor(parallel, {}, std::vector<int>{updated}).runTimedReplicas(feeds, {0, 1});
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_EQ(valueOf(kept[r], updated).floats, valueOf(every[r], updated).floats);
    EXPECT_EQ(valueOf(timed[r].values, updated).floats, valueOf(every[r], updated).floats);
    for (const ir::Op& op : parallel.ops()) {
      if (op.type == ir::OpType::kAllReduce) {
        EXPECT_TRUE(valueOf(kept[r], op.outputs[0]).floats.empty());
      }
    }
  }
}

TEST(CpuReplicas, TimesEachReplicaAndGivesAnAllReduceItsTimeOnEvery) {
  ir::Graph g;
  const int x = g.addInput("x", {64}, DType::kF32, ir::TensorRole::kInput);
  const int y = g.relu("relu", x);
  g.markOutput(g.allReduce("sum", y, Reduction::kSum, 2));
  const std::vector<Feeds> feeds = {{{"x", values({64}, DType::kF32, std::vector<double>(64, 1.5))}},
                                    {{"x", values({64}, DType::kF32, std::vector<double>(64, -2))}}};
  const CpuExecutor executor(g, {});
  const std::vector<TimedRun> timed = executor.runTimedReplicas(feeds, {1, 3});
  ASSERT_EQ(timed.size(), 2u);
  for (const TimedRun& replica : timed) ASSERT_EQ(replica.op_seconds.size(), 2u);
  EXPECT_EQ(timed[0].op_seconds[1], timed[1].op_seconds[1]);
  const auto untimed = executor.runReplicas(feeds);
  for (size_t r = 0; r < 2; ++r) {
    for (size_t t = 0; t < untimed[r].size(); ++t) EXPECT_EQ(timed[r].values[t].floats, untimed[r][t].floats);
  }
  EXPECT_EQ(timed[1].values[static_cast<size_t>(y)].floats, std::vector<double>(64, 0));
  EXPECT_THROW(executor.runTimedReplicas(feeds, {0, 0}), Error);  // fewer than one repeat
}

void expectRefusal(const std::function<void()>& run, ErrorKind kind, const std::string& message) {
  try {
    run();
    ADD_FAILURE() << "expected: " << message;
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), kind);
    EXPECT_NE(std::string(error.what()).find(message), std::string::npos) << error.what();
  }
}

TEST(CpuReplicas, RefusesGroupsItDoesNotRun) {
  ir::Graph g;
  const int x = g.addInput("x", {3}, DType::kF32, ir::TensorRole::kInput);
  g.markOutput(g.allReduce("ar4", x, Reduction::kSum, 4));
  const Feeds feed = {{"x", values({3}, DType::kF32, {1, 2, 3})}};
  const CpuExecutor executor(g, {});
  expectRefusal(
      [&] {
        executor.runReplicas({feed, feed});
      },
      ErrorKind::kUnsupported,
      "op 'ar4': all-reduce across 4 replicas, and the CPU reference runs 2 (tpusim reference --replicas)");
  expectRefusal([&] { executor.run(feed); }, ErrorKind::kUnsupported, "and the CPU reference runs 1");
  expectRefusal([&] { executor.runReplicas({}); }, ErrorKind::kInvalidConfig,
                "the CPU executor needs the feeds of at least one replica");
  // Tensor parallel's data-parallel groups are strided (frontend/passes/tensor_parallel.hpp).
  ImportedModel model;
  const int in = model.graph.addInput("x", {2, 3}, DType::kF32, ir::TensorRole::kInput);
  model.graph.markOutput(
      model.graph.matmul("logits", in, model.graph.addWeight("w", {3, 4}, DType::kF32), false, false));
  const ir::Graph strided = allReduceGradients(buildTrainingGraph(model, TrainingOptions{}), 2, 2);
  const Feeds step = {{"x", values({2, 3}, DType::kF32, std::vector<double>(6, 1))},
                      {"w", values({3, 4}, DType::kF32, std::vector<double>(12, 1))},
                      {"labels", {{2}, DType::kInt64, {}, {0, 1}}}};
  expectRefusal(
      [&] {
        CpuExecutor(strided, {}).runReplicas({step, step});
      },
      ErrorKind::kUnsupported, "an all-reduce over a strided group (tensor parallel) is not run by the CPU reference");
}

}  // namespace
}  // namespace tpusim::reference
