// The memory plan: reuse of dead tensors' bytes, checked against closed forms and by the
// invariant that tensors live at the same time never share bytes.
#include "frontend/passes/memory_plan.hpp"

#include <map>
#include <random>

#include <gtest/gtest.h>

#include "frontend/passes/layers.hpp"
#include "frontend/train/training_graph.hpp"
#include "tests/support/onnx_builder.hpp"

namespace tpusim {
namespace {

// x -> relu -> relu -> ... (n times): each activation dies once the next is written.
ir::Graph reluChain(int n, int64_t elements) {
  ir::Graph g;
  int x = g.addInput("x", {elements}, DType::kF32, ir::TensorRole::kInput);
  for (int i = 0; i < n; ++i) {
    std::string name = "r";  // appended: GCC 12 warns falsely on "literal" + std::string
    name.append(std::to_string(i));
    x = g.relu(name, x);
  }
  g.markOutput(x);
  return g;
}

void expectNoOverlapWhileLive(const ir::Graph& graph, const MemoryPlan& plan) {
  const auto& tensors = graph.tensors();
  for (const auto& a : tensors) {
    for (const auto& b : tensors) {
      const size_t i = static_cast<size_t>(a.id), j = static_cast<size_t>(b.id);
      if (a.id >= b.id || plan.storage[i] != a.id || plan.storage[j] != b.id || !a.bytes() || !b.bytes()) continue;
      const bool live_together = plan.first_op[i] <= plan.last_op[j] && plan.first_op[j] <= plan.last_op[i];
      const bool share_bytes =
          plan.offset[i] < plan.offset[j] + b.bytes() && plan.offset[j] < plan.offset[i] + a.bytes();
      EXPECT_FALSE(live_together && share_bytes) << a.name << " and " << b.name;
    }
  }
}

TEST(MemoryPlan, ChainNeedsThreeBuffersWhateverItsLength) {
  // The input (live throughout), the op's operand and its result: 3 x 4 KiB, for 10 or 100 ops.
  for (int n : {10, 100}) {
    const ir::Graph g = reluChain(n, 1024);
    const MemoryPlan plan = planMemory(g);
    EXPECT_EQ(plan.peak_bytes, 3u * 4096) << n;
    EXPECT_EQ(plan.live_peak_bytes, 3u * 4096) << n;
    EXPECT_EQ(plan.unplanned_bytes, static_cast<uint64_t>(n + 1) * 4096) << n;
    EXPECT_EQ(plan.persistent_bytes, 4096u);
    expectNoOverlapWhileLive(g, plan);
  }
}

TEST(MemoryPlan, TrainingGraphKeepsNoTwoLiveTensorsInTheSameBytes) {
  auto b = testing::OnnxBuilder::mlp();
  const ImportedModel model = importOnnxModel(b.model(), OnnxImportOptions{64});
  const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{});
  const MemoryPlan plan = planMemory(graph);
  expectNoOverlapWhileLive(graph, plan);
  EXPECT_LE(plan.live_peak_bytes, plan.peak_bytes);
  EXPECT_LT(plan.peak_bytes, plan.unplanned_bytes);
  EXPECT_GE(plan.peak_bytes, plan.persistent_bytes);
  // Views and in-place updates share their storage's offset.
  for (const auto& tensor : graph.tensors()) {
    if (tensor.alias_of >= 0) {
      EXPECT_EQ(plan.offset[static_cast<size_t>(tensor.id)], plan.offset[static_cast<size_t>(tensor.alias_of)]);
    }
  }
  // Deterministic.
  const MemoryPlan again = planMemory(graph);
  EXPECT_EQ(again.offset, plan.offset);
}

TEST(Layers, FollowModulePathsGradientsAndUpdatedWeights) {
  EXPECT_EQ(layerOfName("/layer1/layer1.0/conv1/Conv"), "/layer1/layer1.0/conv1");
  EXPECT_EQ(layerOfName("/layer1/layer1.0/conv1/Conv.grad_input"), "/layer1/layer1.0/conv1");
  EXPECT_EQ(layerOfName("/Conv"), "/Conv");
  EXPECT_EQ(layerOfName("loss.grad"), "loss");
  auto b = testing::OnnxBuilder::mlp();
  const ImportedModel model = importOnnxModel(b.model(), OnnxImportOptions{8});
  const ir::Graph graph = buildTrainingGraph(model, TrainingOptions{});
  const std::vector<std::string> layers = assignLayers(graph);
  ASSERT_EQ(layers.size(), graph.ops().size());
  for (size_t i = 0; i < layers.size(); ++i) {
    const ir::Op& op = graph.ops()[i];
    if (op.type != ir::OpType::kSgdUpdate) continue;
    // The update's layer is that of the first op reading its weight.
    for (size_t j = 0; j < graph.ops().size(); ++j) {
      const auto& inputs = graph.ops()[j].inputs;
      if (std::find(inputs.begin(), inputs.end(), op.inputs[0]) != inputs.end()) {
        EXPECT_EQ(layers[i], layers[j]) << op.name;
        break;
      }
    }
  }
}

}  // namespace
}  // namespace tpusim

namespace tpusim {
namespace {

// "prefix" + i, appended: GCC 12 warns falsely on "literal" + std::string.
std::string named(const char* prefix, int i) {
  std::string name = prefix;
  name.append(std::to_string(i));
  return name;
}

// The placement as first written (quadratic): for each storage by size, largest first, the
// lowest gap among the placed storages live at the same time; a storage reuses memory when it
// overlaps one that died before it was written. planMemory must give exactly this.
TEST(MemoryPlan, PlacementAndReuseMatchTheQuadraticReference) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    ir::Graph g;
    std::vector<int> values = {g.addInput("x", {4, 8}, DType::kF32, ir::TensorRole::kInput)};
    for (int i = 0; i < 3; ++i) values.push_back(g.addWeight(named("w", i), {8, 8}, DType::kF32));
    for (int i = 0; i < 60; ++i) {
      // A [4, 8] x [8, 8] product of two earlier values, or one widened to [4, 8 k] and cut back.
      const int a = values[rng() % values.size()];
      int b = values[rng() % values.size()];
      if (g.tensor(b).shape[0] != 8) b = values[1 + rng() % 3];
      int lhs = a;
      if (g.tensor(a).shape[0] != 4) lhs = values[0];
      int out = g.matmul(named("mm", i), lhs, b, false, false);
      if (rng() % 3 == 0) {
        const int64_t k = 2 + rng() % 6;
        const int wide =
            g.matmul(named("wide", i), out, g.addWeight(named("v", i), {8, 8 * k}, DType::kF32), false, false);
        out = g.slice(named("cut", i), wide, 1, 0, 8, ir::TensorRole::kActivation);
      }
      values.push_back(out);
    }
    g.markOutput(values.back());
    const MemoryPlan plan = planMemory(g);
    std::vector<int> roots;
    for (const ir::Tensor& t : g.tensors()) {
      if (plan.storage[static_cast<size_t>(t.id)] == t.id) roots.push_back(t.id);
    }
    const auto size = [&](int id) { return (g.tensor(id).bytes() + 63) / 64 * 64; };
    const auto live = [&](int a, int b) {
      const size_t i = static_cast<size_t>(a), j = static_cast<size_t>(b);
      return plan.first_op[i] <= plan.last_op[j] && plan.first_op[j] <= plan.last_op[i];
    };
    std::vector<int> order = roots;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return size(a) > size(b); });
    std::map<int, uint64_t> offset;
    std::vector<int> placed;
    for (int id : order) {
      std::vector<std::pair<uint64_t, uint64_t>> busy;
      for (int other : placed) {
        if (live(id, other)) busy.emplace_back(offset[other], offset[other] + size(other));
      }
      std::sort(busy.begin(), busy.end());
      uint64_t candidate = 0;
      for (const auto& [begin, stop] : busy) {
        if (candidate + size(id) <= begin) break;
        candidate = std::max(candidate, stop);
      }
      offset[id] = candidate;
      placed.push_back(id);
      EXPECT_EQ(plan.offset[static_cast<size_t>(id)], candidate) << g.tensor(id).name;
    }
    for (int id : roots) {
      bool reuses = false;
      for (int other : roots) {
        const size_t j = static_cast<size_t>(other);
        if (plan.last_op[j] >= plan.first_op[static_cast<size_t>(id)] || size(id) == 0 || size(other) == 0) continue;
        reuses = reuses || (offset[other] < offset[id] + size(id) && offset[id] < offset[other] + size(other));
      }
      EXPECT_EQ(plan.reuses[static_cast<size_t>(id)], reuses) << g.tensor(id).name;
    }
  }
}

}  // namespace
}  // namespace tpusim
