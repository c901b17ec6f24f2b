// The CUDA executor against the CPU executor. Built where CMake finds nvcc; the
// tests that need a GPU skip, with the CUDA runtime's reason, where none is visible.
#include "reference/cuda/cuda_executor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "api/functional.hpp"
#include "api/session.hpp"
#include "reference/cpu/cpu_executor.hpp"
#include "reference/cuda/cuda_device.hpp"
#include "sim/common/error.hpp"
#include "tests/reference/cuda_op_cases.hpp"
#include "tests/support/expect_error.hpp"
#include "tests/support/gpu_bound.hpp"
#include "tests/support/source_dir.hpp"

namespace tpusim::reference {
namespace {

std::string noDeviceReason() {
  try {
    firstCudaDevice();
    return "";
  } catch (const Error& error) {
    return error.what();
  }
}

#define SKIP_WITHOUT_CUDA_DEVICE()                              \
  if (const std::string why = noDeviceReason(); !why.empty()) { \
    GTEST_SKIP() << "no CUDA device to run on: " << why;        \
  }

ir::TensorValue f32(ir::Shape shape, std::vector<double> values) {
  return {std::move(shape), DType::kF32, values, {}};
}

using tpusim::testing::checkGpuTensor;
using tpusim::testing::expectError;

// The GPU tests' bound (tests/support/gpu_bound.hpp) can fail: here, without a GPU, on made-up values.
TEST(CudaExecutor, GpuBoundFlagsIntegersNonFiniteValuesAndNormwiseErrors) {
  ir::Graph g;
  const int f = g.addInput("f", {3}, DType::kF32, ir::TensorRole::kInput);
  const int h = g.addInput("h", {3}, DType::kBF16, ir::TensorRole::kInput);
  const int n = g.addInput("n", {2}, DType::kInt32, ir::TensorRole::kInput);
  const auto value = [](DType dtype, std::vector<double> floats, std::vector<int64_t> ints = {}) {
    return ir::TensorValue{{static_cast<int64_t>(floats.empty() ? ints.size() : floats.size())}, dtype, floats, ints};
  };
  const ir::TensorValue cpu = value(DType::kF32, {1.0, -2.0, 4.0});
  EXPECT_TRUE(checkGpuTensor(g.tensor(f), value(DType::kF32, {1.0, -2.0, 4.0 + 3e-4}), cpu).problem.empty());
  const auto off = checkGpuTensor(g.tensor(f), value(DType::kF32, {1.0, -2.0, 4.0 + 5e-4}), cpu);
  EXPECT_NE(off.problem.find("'f' (f32): normwise error"), std::string::npos) << off.problem;
  EXPECT_NEAR(off.normwise, 1.25e-4, 1e-9);
  // bf16: 2e-2 normwise, so a flip of the last bit (2^-8 relative) passes.
  EXPECT_TRUE(checkGpuTensor(g.tensor(h), value(DType::kBF16, {1.0, -2.0, 4.0 + 1.0 / 64}),
                             value(DType::kBF16, {1.0, -2.0, 4.0}))
                  .problem.empty());
  const double nan = std::nan("");
  EXPECT_FALSE(checkGpuTensor(g.tensor(f), value(DType::kF32, {1.0, nan, 4.0}), cpu).problem.empty());
  EXPECT_TRUE(checkGpuTensor(g.tensor(f), value(DType::kF32, {1.0, nan, 4.0}), value(DType::kF32, {1.0, nan, 4.0}))
                  .problem.empty());
  EXPECT_FALSE(checkGpuTensor(g.tensor(f), value(DType::kF32, {1.0, INFINITY, 4.0}), cpu).problem.empty());
  EXPECT_NE(checkGpuTensor(g.tensor(n), value(DType::kInt32, {}, {1, 2}), value(DType::kInt32, {}, {1, 3}))
                .problem.find("the integers differ"),
            std::string::npos);
}

// What additions compute is bounded against the magnitudes they added, by a bound that grows with
// how many deep they are: after cancellation the relative error may be large, and a long sum's
// rounding differs with its order.
TEST(CudaExecutor, GpuBoundHoldsAdditionsToTheMagnitudesTheyAdded) {
  ir::Graph g;
  const int x = g.addInput("x", {2, 4}, DType::kF32, ir::TensorRole::kInput);
  const int sum = g.reduce("sum", x, ir::Reduction::kSum, {1}, false);
  const int total = g.reduce("total", sum, ir::Reduction::kSum, {0}, false);
  const int difference = g.binary(ir::OpType::kSub, "difference", total, x);  // broadcast over x
  const int product = g.binary(ir::OpType::kMul, "product", total, total);
  const auto value = [](ir::Shape shape, std::vector<double> floats) {
    return ir::TensorValue{std::move(shape), DType::kF32, std::move(floats), {}};
  };
  // Rows summing to 1e-3 and 0 out of terms of magnitude 3000 and 2: an error of 1e-5 is 1% of
  // the sums, but 3.3e-9 of what was added.
  std::vector<ir::TensorValue> cpu(g.tensors().size());
  cpu[static_cast<size_t>(x)] = value({2, 4}, {1000.0, -1000.0, 500.0, -499.999, 1.0, -1.0, 0.0, 0.0});
  cpu[static_cast<size_t>(sum)] = value({2}, {1e-3, 0.0});
  cpu[static_cast<size_t>(total)] = value({}, {1e-3});
  cpu[static_cast<size_t>(difference)] =
      value({2, 4}, {-999.999, 1000.001, -499.999, 500.0, -0.999, 1.001, 1e-3, 1e-3});
  cpu[static_cast<size_t>(product)] = value({}, {1e-6});
  std::vector<ir::TensorValue> gpu = cpu;
  gpu[static_cast<size_t>(sum)] = value({2}, {1e-3 + 1e-5, 0.0});
  gpu[static_cast<size_t>(total)] = value({}, {1e-3 + 1e-5});
  gpu[static_cast<size_t>(product)] = value({}, {1.02e-6});
  EXPECT_FALSE(
      checkGpuTensor(g.tensor(sum), gpu[static_cast<size_t>(sum)], cpu[static_cast<size_t>(sum)]).problem.empty());
  const tpusim::testing::GpuStepBound bound(g, cpu);
  const auto close = bound.check(g.tensor(sum), gpu[static_cast<size_t>(sum)]);
  EXPECT_TRUE(close.problem.empty()) << close.problem;
  EXPECT_NEAR(close.normwise, 1e-2, 1e-9);  // as checkGpuTensor measures it, for the GPU table
  EXPECT_NEAR(close.of_added, 1e-5 / 2999.999, 1e-12);
  EXPECT_TRUE(bound.check(g.tensor(total), gpu[static_cast<size_t>(total)]).problem.empty());  // carried through
  EXPECT_TRUE(bound.check(g.tensor(difference), gpu[static_cast<size_t>(difference)]).problem.empty());
  // Not an addition: held to its own value, so 2% off fails.
  EXPECT_FALSE(bound.check(g.tensor(product), gpu[static_cast<size_t>(product)]).problem.empty());
  const auto off = bound.check(g.tensor(sum), value({2}, {1.0, 0.0}));  // 1 off: 3.3e-4 of the terms
  EXPECT_NE(off.problem.find("'sum:out' (f32), added 4 deep"), std::string::npos) << off.problem;

  // A million terms: each order is within 2^-24 per term of the exact sum, so 2e6 u (about 0.12).
  ir::Graph long_sum;
  const int terms = long_sum.addInput("terms", {1000000}, DType::kF32, ir::TensorRole::kInput);
  const int all = long_sum.reduce("all", terms, ir::Reduction::kSum, {0}, false);
  std::vector<ir::TensorValue> exact(2);
  exact[static_cast<size_t>(terms)] = value({1000000}, std::vector<double>(1000000, 1e-6));
  exact[static_cast<size_t>(all)] = value({}, {1.0});
  const tpusim::testing::GpuStepBound long_bound(long_sum, exact);
  EXPECT_TRUE(long_bound.check(long_sum.tensor(all), value({}, {1.05})).problem.empty());
  EXPECT_FALSE(long_bound.check(long_sum.tensor(all), value({}, {1.2})).problem.empty());

  // An infinite sum, matched, does not make the other sums' magnitude infinite.
  cpu[static_cast<size_t>(x)].floats[4] = INFINITY;
  cpu[static_cast<size_t>(sum)].floats[1] = INFINITY;
  const tpusim::testing::GpuStepBound with_infinity(g, cpu);
  EXPECT_FALSE(with_infinity.check(g.tensor(sum), value({2}, {1.0, INFINITY})).problem.empty());
}

TEST(CudaExecutor, RefusesOpsAndDtypesItLacksNamingTheOp) {
  ir::Graph partial;
  const int a = partial.addInput("a", {2, 3, 4, 8}, DType::kF32, ir::TensorRole::kInput);
  const int w = partial.addWeight("w", {3, 8, 2}, DType::kF32);
  partial.markOutput(partial.matmul("mm", a, w, false, false));
  expectError([&] { CudaExecutor{partial}; }, ErrorKind::kUnsupported,
              "the CUDA executor cannot run op 'mm' (MatMul): the CUDA MatMul broadcasts a rank-2 operand over the "
              "batch, not a partial batch shape; use --backend cpu");
}

// A training graph small enough to check by hand: y = relu(x w + b), loss, gradients, SGD.
ir::Graph tinyStep() {
  ir::Graph g;
  const int x = g.addInput("x", {2, 3}, DType::kF32, ir::TensorRole::kInput);
  const int labels = g.addInput("labels", {2}, DType::kInt64, ir::TensorRole::kLabel);
  const int w = g.addWeight("w", {3, 4}, DType::kF32);
  const int b = g.addWeight("b", {4}, DType::kF32);
  const int y = g.relu("relu", g.add("bias", g.matmul("mm", x, w, false, false), b));
  g.markOutput(g.softmaxCrossEntropy("loss", y, labels));
  const int dy = g.softmaxCrossEntropyGrad("loss.grad", y, labels);
  const int dz = g.reluGrad("relu.grad", dy, y);
  g.markOutput(g.sgdUpdate("w.sgd", w, g.matmul("mm.grad_b", x, dz, true, false, ir::TensorRole::kGradient), 0.5));
  g.markOutput(g.sgdUpdate("b.sgd", b, g.reduceSumTo("bias.grad_b", dz, {4}), 0.5));
  g.markOutput(g.scale("scaled", g.reshape("flat", y, {8}), 0.25));
  return g;
}

std::map<std::string, ir::TensorValue> tinyFeeds(int64_t label) {
  return {{"x", f32({2, 3}, {1, -2, 0.5, 3, 0.25, -1})},
          {"labels", {{2}, DType::kInt64, {}, {label, 1}}},
          {"w", f32({3, 4}, {0.5, -1, 2, 0.25, 1, 0.5, -0.5, 2, -2, 1, 0.75, -0.25})},
          {"b", f32({4}, {0.5, 0, -0.5, 1})}};
}

// The CUDA executor takes the training step of every shipped model (its refusals come before any
// device is touched, so this needs no GPU): `tpusim reference --backend cuda` on the zoo runs.
TEST(CudaExecutor, TakesTheTrainingStepOfEveryShippedModel) {
  for (const std::string model : {"mlp", "resnet50", "bert_base", "gpt2_small", "vit_b16", "dlrm"}) {
    SCOPED_TRACE(model);
    RunRequest request;
    request.model_path = tpusim::testing::sourceDir() + "/traces/" + model + ".onnx";
    request.batch = 2;
    const ModelGraph built = buildModelGraph(request);
    EXPECT_NO_THROW(CudaExecutor{built.graph});
  }
}

TEST(CudaExecutor, RefusesBadFeedsBeforeTouchingADevice) {
  const ir::Graph g = tinyStep();
  const CudaExecutor executor(g);
  expectError([&] { executor.runTimed(tinyFeeds(4), {}); }, ErrorKind::kInvalidInput,
              "op 'loss': label 4 of row 0 is not a class id in [0, 4)");
  std::map<std::string, ir::TensorValue> feeds = tinyFeeds(0);
  feeds.erase("b");
  expectError([&] { executor.runTimed(feeds, {}); }, ErrorKind::kInvalidInput, "no value given for weight 'b'");
  expectError([&] { executor.runTimed(tinyFeeds(0), {1, 0}); }, ErrorKind::kInvalidConfig, "--repeats");
}

TEST(CudaExecutor, RunsASmallTrainingStepLikeTheCpuExecutor) {
  SKIP_WITHOUT_CUDA_DEVICE();
  const ir::Graph g = tinyStep();
  const TimedRun gpu = CudaExecutor(g).runTimed(tinyFeeds(2), {1, 3});
  const std::vector<ir::TensorValue> cpu = CpuExecutor(g, {}).run(tinyFeeds(2));
  ASSERT_EQ(gpu.op_seconds.size(), g.ops().size());
  for (size_t i = 0; i < g.ops().size(); ++i) {
    // A Reshape launches nothing (its output aliases its input): its two events may read 0 apart.
    if (g.ops()[i].type == ir::OpType::kReshape) {
      EXPECT_GE(gpu.op_seconds[i], 0.0);
    } else {
      EXPECT_GT(gpu.op_seconds[i], 0.0) << g.ops()[i].name;
    }
  }
  ASSERT_EQ(gpu.op_kernels.size(), g.ops().size());
  for (size_t i = 0; i < g.ops().size(); ++i) {
    const std::string& kernel = gpu.op_kernels[i];
    if (g.ops()[i].type == ir::OpType::kMatMul) {
      EXPECT_EQ(kernel, "cuBLAS cublasSgemmStridedBatched (pedantic math: no TF32)") << g.ops()[i].name;
    } else if (g.ops()[i].type != ir::OpType::kReshape) {
      EXPECT_EQ(kernel, "tpusim kernel") << g.ops()[i].name;
    }
  }
  for (const ir::Tensor& tensor : g.tensors()) {
    const ir::TensorValue& a = gpu.values[static_cast<size_t>(tensor.id)];
    const ir::TensorValue& b = cpu[static_cast<size_t>(tensor.id)];
    ASSERT_EQ(a.shape, b.shape) << tensor.name;
    EXPECT_EQ(a.ints, b.ints) << tensor.name;
    // The products and sums of these few terms are exact in f32, so the order does not
    // matter, except for exp and log in the loss (a few ulp apart between libraries).
    for (size_t i = 0; i < a.floats.size(); ++i) {
      EXPECT_NEAR(a.floats[i], b.floats[i], 1e-6 * (1 + std::abs(b.floats[i]))) << tensor.name << "[" << i << "]";
    }
  }
}

TEST(CudaExecutor, MatMulTransposesAndBroadcastsOverTheBatchLikeTheCpuExecutor) {
  SKIP_WITHOUT_CUDA_DEVICE();
  ir::Graph g;
  const int a = g.addInput("a", {2, 3, 4}, DType::kF32, ir::TensorRole::kInput);  // [batch, k, m] read transposed
  const int b = g.addWeight("b", {5, 3}, DType::kF32);                            // [n, k] read transposed
  g.markOutput(g.matmul("mm", a, b, true, true));                                 // [2, 4, 5]
  std::map<std::string, ir::TensorValue> feeds;
  std::vector<double> av(24), bv(15);
  for (size_t i = 0; i < av.size(); ++i) av[i] = static_cast<double>(static_cast<int>(i % 7) - 3);
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<double>(static_cast<int>(i % 5) - 2) * 0.5;
  feeds["a"] = f32({2, 3, 4}, av);
  feeds["b"] = f32({5, 3}, bv);
  const TimedRun gpu = CudaExecutor(g).runTimed(feeds, {0, 1});
  const std::vector<ir::TensorValue> cpu = CpuExecutor(g, {}).run(feeds);
  const int out = g.outputs()[0];
  EXPECT_EQ(gpu.values[static_cast<size_t>(out)].floats,
            cpu[static_cast<size_t>(out)].floats);  // small integers: exact
}

TEST(CudaExecutor, RunsTheMlpTrainingStepWithinF32RoundingOfTheCpuExecutor) {
  SKIP_WITHOUT_CUDA_DEVICE();
  RunRequest request;
  request.model_path = tpusim::testing::sourceDir() + "/traces/mlp.onnx";
  request.batch = 8;
  const ModelGraph built = buildModelGraph(request);
  const NamedValues inputs = generatedInputs(built, 7);
  const auto feeds = completeFeeds(built, {inputs.begin(), inputs.end()});
  const TimedRun gpu = CudaExecutor(built.graph).runTimed(feeds, {1, 3});
  const std::vector<ir::TensorValue> cpu = CpuExecutor(built.graph, {}).run(feeds);
  for (int id : stepOutputIds(built.graph)) {
    const std::vector<double>& a = gpu.values[static_cast<size_t>(id)].floats;
    const std::vector<double>& b = cpu[static_cast<size_t>(id)].floats;
    double error = 0, scale = 0;
    for (size_t i = 0; i < a.size(); ++i)
      error = std::max(error, std::abs(a[i] - b[i])), scale = std::max(scale, std::abs(b[i]));
    // f32 sums of up to 784 terms in two orders: normwise within a few hundred ulp.
    EXPECT_LT(error, 1e-5 * std::max(scale, 1e-30)) << built.graph.tensor(id).name;
  }
}

// Every op family and the mlp steps of cuda_op_cases.hpp on the GPU against the CPU executor,
// within tests/support/gpu_bound.hpp's bound. Each case's worst normwise error, per width, is
// printed for docs/reference.md's GPU table.
TEST(CudaExecutor, RunsEveryOpFamilyAndTheMlpStepsWithinABoundOfTheCpuExecutor) {
  SKIP_WITHOUT_CUDA_DEVICE();
  for (const OpCase& c : cudaOpCases()) {
    SCOPED_TRACE(c.name);
    const TimedRun gpu = CudaExecutor(c.graph).runTimed(c.feeds, {1, 3});
    const std::vector<ir::TensorValue> cpu = CpuExecutor(c.graph, {}).run(c.feeds);
    const tpusim::testing::GpuStepBound bound(c.graph, cpu);
    struct Worst {
      double error = 0;
      std::string tensor = "-";
    } worst_f32, worst_half;
    for (const ir::Tensor& tensor : c.graph.tensors()) {
      const ir::TensorValue& a = gpu.values[static_cast<size_t>(tensor.id)];
      const auto check = bound.check(tensor, a);
      EXPECT_TRUE(check.problem.empty()) << check.problem;
      if (a.floats.empty()) continue;
      Worst& worst = tensor.dtype == DType::kF32 ? worst_f32 : worst_half;
      if (check.normwise > worst.error || worst.tensor == "-") worst = {check.normwise, tensor.name};
    }
    std::printf("gpu vs cpu  %-34s worst normwise error: f32 %.2e (%s), bf16/f16 %.2e (%s)\n", c.name.c_str(),
                worst_f32.error, worst_f32.tensor.c_str(), worst_half.error, worst_half.tensor.c_str());
  }
}

}  // namespace
}  // namespace tpusim::reference
