// The data_parallel pass (an all-reduce per weight gradient) and the lowering of
// its collectives to ICI instructions and VPU adds.
#include "frontend/passes/data_parallel.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>

#include "frontend/compile.hpp"
#include "frontend/passes/fusion.hpp"
#include "frontend/passes/memory_plan.hpp"
#include "frontend/train/training_graph.hpp"
#include "sim/common/error.hpp"
#include "sim/interconnect/collectives.hpp"
#include "tests/support/onnx_builder.hpp"
#include "tests/support/op_types.hpp"
#include "traces/program_format.hpp"

namespace tpusim {
namespace {

using ir::OpType;

ir::Graph mlpGraph(const std::string& optimizer = "sgd") {
  auto b = testing::OnnxBuilder::mlp();
  const ImportedModel model = importOnnxModel(b.model(), OnnxImportOptions{32});
  TrainingOptions options;
  options.optimizer.kind = parseOptimizer(optimizer);
  return buildTrainingGraph(model, options);
}

int countOps(const ir::Graph& g, OpType type) {
  int n = 0;
  for (const ir::Op& op : g.ops()) n += op.type == type ? 1 : 0;
  return n;
}

TEST(DataParallel, EveryWeightGradientIsAllReducedRightAfterItsProducer) {
  const ir::Graph g = mlpGraph();
  const ir::Graph dp = allReduceGradients(g, 64);
  const int updates = countOps(g, OpType::kSgdUpdate);
  ASSERT_GT(updates, 0);
  EXPECT_EQ(countOps(g, OpType::kAllReduce), 0);
  EXPECT_EQ(countOps(dp, OpType::kAllReduce), updates);
  const std::vector<ir::Op>& ops = dp.ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    const ir::Op& op = ops[i];
    if (op.type == OpType::kSgdUpdate) {
      // The update reads the reduced gradient, never the local one.
      const ir::Op* reducer = dp.producer(op.inputs[1]);
      ASSERT_NE(reducer, nullptr);
      EXPECT_EQ(reducer->type, OpType::kAllReduce) << op.name;
    }
    if (op.type != OpType::kAllReduce) continue;
    EXPECT_EQ(op.replicas, 64);
    EXPECT_EQ(op.reduction, ir::Reduction::kSum);
    EXPECT_EQ(dp.tensor(op.outputs[0]).role, ir::TensorRole::kGradient);
    EXPECT_EQ(op.phase, ir::Phase::kCollective) << op.name;
    ASSERT_GT(i, 0u);
    EXPECT_EQ(dp.producer(op.inputs[0]), &ops[i - 1]) << op.name;  // so it overlaps the rest of backward
  }
}

TEST(DataParallel, OneReplicaOrInferenceIsUnchanged) {
  const ir::Graph g = mlpGraph();
  EXPECT_EQ(allReduceGradients(g, 1).toString(), g.toString());
  auto b = testing::OnnxBuilder::mlp();
  const ir::Graph inference = buildInferenceGraph(importOnnxModel(b.model(), OnnxImportOptions{32}));
  EXPECT_EQ(allReduceGradients(inference, 64).toString(), inference.toString());
}

TEST(DataParallel, AdamReducesEachGradientOnceForAllItsStateUpdates) {
  const ir::Graph g = mlpGraph("adam");
  const ir::Graph dp = allReduceGradients(g, 8);
  // The mlp has 4 weights (two layers' w and b): one all-reduce each, whatever the state updates.
  EXPECT_EQ(countOps(dp, OpType::kAllReduce), 4);
}

TEST(DataParallel, CollectivesLowerToIciInstructionsAndVpuAdds) {
  const HardwareParams hw = HardwareParams::load("tpuv4");
  LowerOptions options{"mlp", "training", 32};
  options.topology = Topology::parse(TopologyKind::kTorus3d, "4x4x4");
  const program::Program program = compileGraph(mlpGraph(), hw, options).program;
  EXPECT_EQ(program.replicas(), 64u);
  EXPECT_EQ(program.topology_kind(), "3d_torus");
  EXPECT_EQ(program.topology_shape(), "4x4x4");
  const program::ChipProgram& chip = program.chips(0);
  std::map<std::string, program::Phase> phase_of;  // by op, from its lowering record
  for (const program::OpLowering& op : chip.ops()) phase_of.emplace(op.op(), op.phase());
  int collectives = 0;
  for (const program::Instruction& ins : chip.instructions()) {
    if (ins.unit() != program::ICI) continue;
    ++collectives;
    EXPECT_EQ(phase_of.at(ins.op()), program::COLLECTIVE) << ins.op();
    const program::Collective& c = ins.collective();
    EXPECT_EQ(c.kind(), program::ALL_REDUCE);
    EXPECT_EQ(c.algorithm(), program::TORUS);  // tpuv4's ici.all_reduce_algorithm
    EXPECT_EQ(c.replicas(), 64u);
    EXPECT_EQ(c.dtype(), program::F32);
    // The adds on the VPU depend on the collective and sum to this chip's share of the
    // torus closed form (sim/interconnect/collectives.hpp).
    uint64_t added = 0;
    for (const program::Instruction& add : chip.instructions()) {
      if (add.unit() != program::VPU || add.op() != ins.op()) continue;
      EXPECT_EQ(add.deps(0), ins.id());
      added += add.vector().elements();
    }
    EXPECT_EQ(added, allReduceReducedBytes(*options.topology, c.bytes(), AllReduceAlgorithm::kTorus, 0) / 4)
        << instructionName(ins);
  }
  EXPECT_EQ(collectives, 4);
}

TEST(DataParallel, ReductionAddsWaitUntilTheirResultIsRead) {
  // The VPU runs in order: adds emitted with their collective would stall the backward
  // pass behind it. They come after every backward matmul, just before the updates.
  const HardwareParams hw = HardwareParams::load("tpuv4");
  LowerOptions options{"mlp", "training", 32};
  options.topology = Topology::parse(TopologyKind::kTorus3d, "4x4x4");
  const program::ChipProgram chip = compileGraph(mlpGraph(), hw, options).program.chips(0);
  uint32_t last_matmul = 0, first_add = UINT32_MAX, last_add = 0, first_update = UINT32_MAX;
  const testing::OpTypes types(chip);
  for (const program::Instruction& ins : chip.instructions()) {
    if (ins.unit() == program::MXU) last_matmul = ins.id();
    const bool add = ins.unit() == program::VPU && ins.op().find(".all_reduce") != std::string::npos;
    if (add) first_add = std::min(first_add, ins.id()), last_add = ins.id();
    if (types.of(ins) == "SgdUpdate") first_update = std::min(first_update, ins.id());
  }
  EXPECT_GT(first_add, last_matmul);
  EXPECT_LT(first_add, first_update);
  EXPECT_GT(last_add, first_update);  // each just before its own update
}

TEST(DataParallel, ACollectivesInputLivesAsLongAsItsOutput) {
  // The collective reads its input while in flight, and its adds read it when the
  // output is first read: no tensor may reuse the input's bytes before then.
  const ir::Graph dp = fuseElementwise(allReduceGradients(mlpGraph(), 64));
  const MemoryPlan plan = planMemory(dp);
  for (const ir::Op& op : dp.ops()) {
    if (op.type != OpType::kAllReduce) continue;
    const auto in = static_cast<size_t>(op.inputs[0]), out = static_cast<size_t>(op.outputs[0]);
    EXPECT_GE(plan.last_op[in], plan.last_op[out]) << op.name;
  }
}

std::vector<const program::Instruction*> collectivesOf(const program::ChipProgram& chip) {
  std::vector<const program::Instruction*> out;
  for (const program::Instruction& ins : chip.instructions()) {
    if (ins.unit() == program::ICI) out.push_back(&ins);
  }
  return out;
}

TEST(DataParallel, BucketsShareOneCollectiveUpToTheirSize) {
  const HardwareParams hw = HardwareParams::load("tpuv4");
  const ir::Graph graph = mlpGraph();
  LowerOptions options{"mlp", "training", 32};
  options.topology = Topology::parse(TopologyKind::kTorus3d, "4x4x4");
  uint64_t gradient_bytes = 0;
  const ir::Graph dp = allReduceGradients(graph, 64);
  for (const ir::Op& op : dp.ops()) {
    if (op.type == OpType::kAllReduce) gradient_bytes += dp.tensor(op.inputs[0]).bytes();
  }
  // One bucket holds every gradient: one collective over their sum, reading all of them, and
  // adds that share the bucket's closed form (each member's share rounded up).
  options.all_reduce_bucket_bytes = uint64_t{1} << 40;
  const program::ChipProgram one = compileGraph(graph, hw, options).program.chips(0);
  const auto bucketed = collectivesOf(one);
  ASSERT_EQ(bucketed.size(), 1u);
  EXPECT_EQ(bucketed[0]->collective().bytes(), gradient_bytes);
  EXPECT_EQ(bucketed[0]->reads_size(), 4);
  uint64_t added = 0;
  for (const program::Instruction& ins : one.instructions()) {
    if (ins.unit() == program::VPU && ins.op().find(".all_reduce") != std::string::npos) {
      added += ins.vector().elements();
    }
  }
  const uint64_t expected = allReduceReducedBytes(*options.topology, gradient_bytes, AllReduceAlgorithm::kTorus, 0) / 4;
  EXPECT_GE(added, expected);
  EXPECT_LE(added, expected + 4);
  // A bucket of one byte is full at once: one collective per gradient, as with none.
  options.all_reduce_bucket_bytes = 1;
  EXPECT_EQ(collectivesOf(compileGraph(graph, hw, options).program.chips(0)).size(), 4u);
  // Buckets close once they reach the size: the gradients in order are b2 (16 B), w2
  // (128 B), b1 (32 B), w1 (512 B); 144 B closes after w2 and after w1.
  options.all_reduce_bucket_bytes = 144;
  const program::ChipProgram two = compileGraph(graph, hw, options).program.chips(0);
  const auto pairs = collectivesOf(two);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0]->collective().bytes(), 144u);
  EXPECT_EQ(pairs[1]->collective().bytes(), 544u);
  EXPECT_EQ(gradient_bytes, 688u);
}

TEST(DataParallel, ABucketIsLaunchedWhenAResultIsRead) {
  // y = relu(all_reduce(x)); z = all_reduce(y): the relu needs the first result, so the
  // first collective cannot wait for the second however large the bucket.
  ir::Graph g;
  const int x = g.addInput("x", {1024}, DType::kF32, ir::TensorRole::kInput);
  const int y = g.relu("relu", g.allReduce("ar1", x, ir::Reduction::kSum, 8));
  g.markOutput(g.allReduce("ar2", y, ir::Reduction::kSum, 8));
  LowerOptions options{"t", "inference", 1};
  options.topology = Topology::parse(TopologyKind::kTorus3d, "2x2x2");
  options.all_reduce_bucket_bytes = uint64_t{1} << 40;
  const program::ChipProgram chip = compileGraph(g, HardwareParams::load("tpuv4"), options).program.chips(0);
  const auto collectives = collectivesOf(chip);
  ASSERT_EQ(collectives.size(), 2u);
  EXPECT_EQ(collectives[0]->collective().bytes(), 4096u);
}

TEST(DataParallel, AnAllReduceThatDoesNotMatchTheSliceIsAnError) {
  ir::Graph g;
  const int x = g.addInput("x", {1024}, DType::kF32, ir::TensorRole::kInput);
  g.markOutput(g.allReduce("ar", x, ir::Reduction::kSum, 3));
  LowerOptions options{"t", "inference", 1};
  options.topology = Topology::parse(TopologyKind::kTorus2d, "2x4");
  try {
    compileGraph(g, HardwareParams::load("tpuv4"), options);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(
        std::string(error.what()),
        "op 'ar': an all-reduce across 3 replicas needs an ICI slice of a multiple of as many chips (--topology)");
  }
}

}  // namespace
}  // namespace tpusim
