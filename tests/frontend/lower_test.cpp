#include "frontend/lower/lower.hpp"

#include <map>
#include <set>

#include <gtest/gtest.h>

#include "frontend/compile.hpp"
#include "frontend/import/onnx_import.hpp"
#include "frontend/train/training_graph.hpp"
#include "sim/common/error.hpp"
#include "tests/support/onnx_builder.hpp"
#include "traces/program_format.hpp"

namespace tpusim {
namespace {

program::Program lowerMlp(const HardwareParams& hw, int64_t batch = 32) {
  auto b = testing::OnnxBuilder::mlp();
  const ImportedModel model = importOnnxModel(b.model(), OnnxImportOptions{batch});
  return lowerToProgram(buildTrainingGraph(model, TrainingOptions{}), hw, LowerOptions{"mlp", "training", 32});
}

const program::Buffer& bufferNamed(const program::ChipProgram& chip, const std::string& name) {
  for (const auto& buffer : chip.buffers()) {
    if (buffer.name() == name) return buffer;
  }
  throw std::runtime_error("no buffer " + name);
}

TEST(Lower, DependenciesPointBackwardsAndFollowBuffers) {
  const program::Program program = lowerMlp(HardwareParams::load("tpuv4"));
  const program::ChipProgram& chip = program.chips(0);
  for (const auto& ins : chip.instructions()) {
    for (uint32_t dep : ins.deps()) EXPECT_LT(dep, ins.id()) << instructionName(ins);
  }
  // Write after read: each earlier load of w1 is waited for by the store of w1's SGD update
  // that overwrites the bytes it read (the update is split over the cores by byte range).
  const uint32_t w1 = bufferNamed(chip, "w1").id();
  std::set<uint32_t> loads, waited;
  int stores = 0;
  for (const auto& ins : chip.instructions()) {
    const bool reads_w1 = ins.unit() == program::DMA && !ins.reads().empty() && ins.reads(0) == w1;
    const bool writes_w1 = ins.unit() == program::DMA && !ins.writes().empty() && ins.writes(0) == w1;
    if (writes_w1) {
      ++stores;
      for (uint32_t dep : ins.deps()) {
        if (loads.count(dep)) waited.insert(dep);
      }
    }
    if (reads_w1) loads.insert(ins.id());
  }
  EXPECT_GE(loads.size(), 4u);  // forward matmul and weight-gradient use, on two cores
  EXPECT_EQ(stores, 2);         // the update, one half per core
  EXPECT_EQ(waited, loads);
}

TEST(Lower, MatmulsSplitAcrossCoresAndMxus) {
  const program::Program program = lowerMlp(HardwareParams::load("tpuv4"));
  std::set<std::pair<uint32_t, uint32_t>> used;
  for (const auto& ins : program.chips(0).instructions()) {
    if (ins.unit() == program::MXU) used.insert({ins.core(), ins.unit_index()});
  }
  EXPECT_EQ(used.size(), 8u);  // 2 cores x 4 MXUs
}

TEST(Lower, StepThatDoesNotFitHbmNamesTheLargestTensors) {
  HardwareParams hw = HardwareParams::load("tpuv4");
  hw.set("hbm.capacity_gib", "0.000001");  // about 1 KiB
  try {
    lowerMlp(hw);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kResource);
    EXPECT_NE(std::string(error.what()).find("of HBM"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("largest live: "), std::string::npos) << error.what();
  }
}

TEST(Lower, OpLargerThanVmemIsAClearError) {
  HardwareParams hw = HardwareParams::load("tpuv4");
  hw.set("vmem.capacity_mib", "0.001");
  try {
    lowerMlp(hw);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kResource);
    EXPECT_NE(std::string(error.what()).find("of VMEM"), std::string::npos) << error.what();
  }
}

TEST(Lower, BytesAndFlopsMatchTheShapes) {
  HardwareParams hw = HardwareParams::load("tpuv4");
  hw.set("chip.tensor_cores", "1");
  hw.set("mxu.per_core", "1");
  const program::Program program = lowerMlp(hw, 32);
  const auto& first = program.chips(0).instructions();
  // The first op is x[32,16] x w1[8,16]^T: a load of x (32*16*4 B), of w1 (8*16*4 B), one matmul.
  EXPECT_EQ(first[0].dma().bytes(), 32u * 16 * 4);
  EXPECT_EQ(first[1].dma().bytes(), 8u * 16 * 4);
  ASSERT_TRUE(first[2].has_matmul());
  EXPECT_EQ(first[2].matmul().m(), 32u);
  EXPECT_EQ(first[2].matmul().k(), 16u);
  EXPECT_EQ(first[2].matmul().n(), 8u);
  EXPECT_EQ(first[2].flops(), 2u * 32 * 16 * 8);
  EXPECT_EQ(first[3].dma().bytes(), 32u * 8 * 4);  // store of h1
}

}  // namespace
}  // namespace tpusim

namespace tpusim {
namespace {

// Adam's state lives in HBM like the weights: each moment's update loads the moment and
// stores over it (the same buffer), on the VPU at its per-element cost, before the weight's
// update loads the new moments; the step's increment waits for every read of the step.
TEST(Lower, AdamStateIsLoadedAndStoredInPlace) {
  auto b = testing::OnnxBuilder::mlp();
  const ImportedModel model = importOnnxModel(b.model(), OnnxImportOptions{32});
  TrainingOptions options;
  options.optimizer.kind = ir::OptimizerKind::kAdam;
  const program::Program program = lowerToProgram(buildTrainingGraph(model, options), HardwareParams::load("tpuv4"),
                                                  LowerOptions{"mlp", "training", 32});
  const program::ChipProgram& chip = program.chips(0);
  const uint32_t m = bufferNamed(chip, "w1.m").id();
  EXPECT_EQ(bufferNamed(chip, "w1.m").role(), program::WEIGHT);
  int loads = 0, stores = 0;
  uint64_t elements = 0;
  for (const auto& ins : chip.instructions()) {
    if (ins.unit() == program::DMA && ins.reads(0) == m) ++loads;
    if (ins.unit() == program::DMA && ins.writes(0) == m) ++stores;
    if (ins.unit() == program::VPU && ins.op() == "w1.adam.m") {
      EXPECT_EQ(ins.vector().ops_per_element(), 3u);  // b1 m + (1 - b1) g
      elements += ins.vector().elements();
    }
  }
  EXPECT_EQ(stores, 2);          // m' on both cores (w1 is [8, 16], split by rows)
  EXPECT_EQ(loads, 2 + 2);       // by the m update, then m' by the weight update
  EXPECT_EQ(elements, 8u * 16);  // every element once
  const uint32_t step = bufferNamed(chip, "step").id();
  std::set<uint32_t> step_reads;
  for (const auto& ins : chip.instructions()) {
    if (ins.unit() == program::DMA && ins.reads(0) == step) step_reads.insert(ins.id());
    if (ins.unit() == program::DMA && ins.writes(0) == step) {
      const std::set<uint32_t> deps(ins.deps().begin(), ins.deps().end());
      for (uint32_t read : step_reads) EXPECT_TRUE(deps.count(read)) << "the increment overtakes read " << read;
    }
  }
  EXPECT_GT(step_reads.size(), 4u);
}

}  // namespace
}  // namespace tpusim

namespace tpusim {
namespace {

// The MXU has no f64 datapath: an f64 matmul is an "unsupported" error, while f64 vector
// work lowers with 8 bytes an element.
TEST(Lower, F64MatmulIsUnsupportedAndF64VectorWorkMovesEightBytes) {
  HardwareParams hw = HardwareParams::load("tpuv4");
  hw.set("chip.tensor_cores", "1");  // one core loads all of a
  ir::Graph matmul;
  const int x = matmul.addInput("x", {4, 8}, DType::kF64, ir::TensorRole::kInput);
  matmul.markOutput(matmul.matmul("mm", x, matmul.addWeight("w", {8, 2}, DType::kF64), false, false));
  try {
    lowerToProgram(matmul, hw, LowerOptions{"f64", "inference", 4});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(error.what()).find("f64 matmul is not supported on the MXU"), std::string::npos)
        << error.what();
  }
  ir::Graph vector;
  const int a = vector.addInput("a", {4, 8}, DType::kF64, ir::TensorRole::kInput);
  vector.markOutput(vector.relu("relu", a));
  const program::Program program = lowerToProgram(vector, hw, LowerOptions{"f64", "inference", 4});
  uint64_t loaded = 0;
  for (const auto& ins : program.chips(0).instructions()) {
    if (ins.has_dma() && ins.dma().bytes() > 0) loaded = std::max<uint64_t>(loaded, ins.dma().bytes());
  }
  EXPECT_EQ(loaded, 4u * 8 * 8);  // a's 32 elements of 8 bytes
}

// The compiler writes an instruction's part and its op, not its name or its op's type
// (traces/program.proto): every name must still come out unique and every op must have
// the lowering record its type is read from.
TEST(Lower, InstructionsNameTheirOpsRecordAndAreUniquelyNamed) {
  OnnxImportOptions options;
  options.batch = 1;
  options.training = true;
  const ImportedModel model = importOnnxFile(TPUSIM_SOURCE_DIR "/traces/bert_base.onnx", options);
  const program::Program program = compileGraph(buildTrainingGraph(model, TrainingOptions{}),
                                                HardwareParams::load("tpuv4"), LowerOptions{"bert", "training", 1})
                                       .program;
  const program::ChipProgram& chip = program.chips(0);
  std::map<std::string, std::string> type_of;
  for (const program::OpLowering& op : chip.ops()) type_of.emplace(op.op(), op.op_type());
  std::set<std::string> names;
  for (const program::Instruction& ins : chip.instructions()) {
    EXPECT_TRUE(ins.name().empty() && ins.op_type().empty()) << instructionName(ins);
    ASSERT_FALSE(ins.part().empty()) << instructionName(ins);
    const auto record = type_of.find(ins.op());
    ASSERT_NE(record, type_of.end()) << instructionName(ins) << " has no lowering record";
    EXPECT_FALSE(record->second.empty()) << ins.op();
    EXPECT_TRUE(names.insert(instructionName(ins)).second) << instructionName(ins) << " is not unique";
  }
  EXPECT_GT(names.size(), 10000u);
}

// Each op's lowering record carries the phase the training graph gave it: the MLP's step has
// a forward, a backward and SGD updates (frontend/ir/graph.hpp, ir::Phase); inference is all
// forward.
TEST(Lower, EachOpsRecordCarriesItsPhase) {
  const HardwareParams hw = HardwareParams::load("tpuv4");
  std::map<program::Phase, int> training;
  const program::Program program = lowerMlp(hw);
  for (const program::OpLowering& op : program.chips(0).ops()) {
    ++training[op.phase()];
    if (op.op_type() == "SgdUpdate") {
      EXPECT_EQ(op.phase(), program::UPDATE) << op.op();
    }
    if (op.op_type() == "SoftmaxCrossEntropyGrad") {
      EXPECT_EQ(op.phase(), program::BACKWARD) << op.op();
    }
  }
  EXPECT_EQ(training.count(program::PHASE_UNSPECIFIED), 0u);
  EXPECT_GT(training[program::FORWARD], 0);
  EXPECT_GT(training[program::BACKWARD], 0);
  EXPECT_EQ(training[program::UPDATE], 4);  // one SGD update per weight and bias
  auto b = testing::OnnxBuilder::mlp();
  const ImportedModel model = importOnnxModel(b.model(), OnnxImportOptions{32});
  const program::Program inference = lowerToProgram(model.graph, hw, LowerOptions{"mlp", "inference", 32});
  ASSERT_GT(inference.chips(0).ops_size(), 0);
  for (const program::OpLowering& op : inference.chips(0).ops()) EXPECT_EQ(op.phase(), program::FORWARD) << op.op();
}

TEST(Lower, InstructionNameJoinsOpCoreAndPartOrKeepsAGivenName) {
  program::Instruction ins;
  ins.set_op("layer.conv");
  ins.set_core(1);
  ins.set_part("load.x.t3");
  EXPECT_EQ(instructionName(ins), "layer.conv.c1.load.x.t3");
  ins.set_name("given");  // schema 1 and hand-built Programs
  EXPECT_EQ(instructionName(ins), "given");
}

}  // namespace
}  // namespace tpusim
