// The CUDA executor on the host device (reference/cuda/host_device.hpp): its graph walk,
// buffers and every kernel of its own (the functors nvcc compiles for the GPU) run here,
// without a GPU, and give the CPU executor's bits: the kernels add in its order, round
// once to the dtype and call the same float functions. (On a GPU, cuBLAS, cuDNN and the
// GPU's exp and log differ in the last bits: cuda_executor_test.cpp bounds those.)
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "api/functional.hpp"
#include "api/session.hpp"
#include "frontend/passes/data_parallel.hpp"
#include "reference/cpu/cpu_executor.hpp"
#include "reference/cuda/cuda_executor.hpp"
#include "reference/cuda/host_device.hpp"
#include "reference/cuda/kernels/int8_products.hpp"
#include "sim/common/error.hpp"
#include "tests/reference/cuda_op_cases.hpp"
#include "tests/support/expect_error.hpp"
#include "tests/support/gpu_bound.hpp"
#include "tests/support/source_dir.hpp"

namespace tpusim::reference {
namespace {

bool sameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b)); }

// Every tensor of `graph`, bit for bit.
void expectSameValues(const ir::Graph& graph, const std::vector<ir::TensorValue>& expected,
                      const std::vector<ir::TensorValue>& actual) {
  ASSERT_EQ(expected.size(), actual.size());
  for (const ir::Tensor& tensor : graph.tensors()) {
    const ir::TensorValue& e = expected[static_cast<size_t>(tensor.id)];
    const ir::TensorValue& a = actual[static_cast<size_t>(tensor.id)];
    ASSERT_EQ(e.shape, a.shape) << tensor.name;
    ASSERT_EQ(e.dtype, a.dtype) << tensor.name;
    EXPECT_EQ(e.ints, a.ints) << tensor.name;
    ASSERT_EQ(e.floats.size(), a.floats.size()) << tensor.name;
    int reported = 0;
    for (size_t i = 0; i < e.floats.size() && reported < 3; ++i) {
      if (!sameBits(e.floats[i], a.floats[i])) {
        ADD_FAILURE() << tensor.name << "[" << i << "]: cpu " << e.floats[i] << ", cuda (host) " << a.floats[i];
        ++reported;
      }
    }
  }
}

TimedRun onHost(const ir::Graph& graph, const Feeds& feeds) {
  cuda::HostDevice device;
  return CudaExecutor(graph).runTimedOn(device, feeds, {0, 1});
}

void expectLikeCpu(const ir::Graph& graph, const Feeds& feeds) {
  expectSameValues(graph, CpuExecutor(graph, {}).run(feeds), onHost(graph, feeds).values);
}

using tpusim::testing::expectError;

TEST(CudaHostDevice, RunsEveryOpFamilyAndTheMlpStepsBitForBitLikeTheCpuExecutor) {
  for (const OpCase& c : cudaOpCases()) {
    SCOPED_TRACE(c.name);
    expectLikeCpu(c.graph, c.feeds);
  }
}

// The GPU device splits a float reduction with few outputs into chunks of terms (ReduceArgs::chunk):
// on a host device splitting as it does, a sum is the sum of its chunks' sums, each added in order.
TEST(CudaHostDevice, ReducesInChunksOfTermsWhereTheDeviceSplitsThem) {
  ir::Graph g;
  const int x = g.addInput("x", {4}, DType::kF32, ir::TensorRole::kInput);
  const int sum = g.reduce("sum", x, ir::Reduction::kSum, {0}, false);
  const int mean = g.reduce("mean", x, ir::Reduction::kMean, {0}, false);
  const int max = g.reduce("max", x, ir::Reduction::kMax, {0}, false);
  g.markOutput(sum);
  g.markOutput(mean);
  g.markOutput(max);
  Feeds feeds;
  feeds["x"] = ir::TensorValue::zeros({4}, DType::kF32);
  feeds["x"].floats = {16777216.0, 1, 1, 1};  // 2^24: adding 1 to it is lost to rounding
  cuda::HostDevice chunked(2);
  const TimedRun run = CudaExecutor(g).runTimedOn(chunked, feeds, {0, 1});
  // (2^24 + 1) + (1 + 1): the first 1 is lost, the chunk of two ones is not; in order, all three are.
  EXPECT_EQ(run.values[static_cast<size_t>(sum)].floats[0], 16777218.0);
  EXPECT_EQ(run.values[static_cast<size_t>(mean)].floats[0], static_cast<double>(16777218.0f / 4.0f));
  EXPECT_EQ(run.values[static_cast<size_t>(max)].floats[0], 16777216.0);
  EXPECT_EQ(CpuExecutor(g, {}).run(feeds)[static_cast<size_t>(sum)].floats[0], 16777216.0);
  EXPECT_EQ(onHost(g, feeds).values[static_cast<size_t>(sum)].floats[0], 16777216.0);  // no chunks: the CPU's order

  feeds["x"].floats = {1, 2, std::nan(""), 3};  // a NaN in the second chunk wins the maximum
  EXPECT_TRUE(
      std::isnan(CudaExecutor(g).runTimedOn(chunked, feeds, {0, 1}).values[static_cast<size_t>(max)].floats[0]));
}

// Every op case on a host device that chunks reductions of more than 5 terms: the chunks' sums
// round apart from the CPU executor's, so the results are within the GPU's bound of it (a sum's
// against its terms' magnitudes), and where no rounding differs (integers, maxima, exactly
// representable sums) equal to it.
TEST(CudaHostDevice, ChunkedReductionsStayWithinTheGpuBoundOfTheCpuExecutor) {
  for (const OpCase& c : cudaOpCases()) {
    SCOPED_TRACE(c.name);
    cuda::HostDevice chunked(5);
    const TimedRun run = CudaExecutor(c.graph).runTimedOn(chunked, c.feeds, {0, 1});
    const std::vector<ir::TensorValue> cpu = CpuExecutor(c.graph, {}).run(c.feeds);
    const tpusim::testing::GpuStepBound bound(c.graph, cpu);
    for (const ir::Tensor& tensor : c.graph.tensors()) {
      const auto check = bound.check(tensor, run.values[static_cast<size_t>(tensor.id)]);
      EXPECT_TRUE(check.problem.empty()) << check.problem;
    }
  }
  ir::Graph g;  // sums of small integers are exact in any order: [2, 3, 4] to [1, 3, 1] and to [3, 4]
  const int x = g.addInput("x", {2, 3, 4}, DType::kF32, ir::TensorRole::kInput);
  g.markOutput(g.reduce("sum", x, ir::Reduction::kSum, {0, 2}, true));
  g.markOutput(g.reduceSumTo("sum_to", x, {3, 4}, ir::TensorRole::kActivation));
  g.markOutput(g.reduce("min", x, ir::Reduction::kMin, {0, 1, 2}, false));
  Feeds feeds = randomFeeds(g, 4, -8, 8);
  for (double& v : feeds["x"].floats) v = std::floor(v);
  cuda::HostDevice chunked(3);
  expectSameValues(g, CpuExecutor(g, {}).run(feeds), CudaExecutor(g).runTimedOn(chunked, feeds, {0, 1}).values);
}

// Labels computed in the step (a language model's, shifted out of its ids) are checked by the
// losses' kernels: in range, the CPU executor's bits; out of range, its error for the first
// op that reads them. NLL's ignore_index is not an error.
TEST(CudaHostDevice, TakesComputedLabelsAndChecksThemOnTheDevice) {
  ir::Graph g;
  const int logits = g.addInput("logits", {3, 4}, DType::kF32, ir::TensorRole::kInput);
  const int ids = g.addInput("ids", {3}, DType::kInt64, ir::TensorRole::kInput);
  const int shift = g.addInput("shift", {1}, DType::kInt64, ir::TensorRole::kInput);
  const int labels = g.binary(ir::OpType::kSub, "labels", ids, shift);
  g.markOutput(g.softmaxCrossEntropy("loss", logits, labels));
  g.markOutput(g.softmaxCrossEntropyGrad("loss.grad", logits, labels));
  const int logp = g.softmax("logp", logits, 1, true);
  const int nll = g.nllLoss("nll", logp, labels, -1, ir::Reduction::kMean, -1);
  g.markOutput(nll);
  g.markOutput(g.nllLossGrad("nll.grad", g.ops().back()));
  Feeds feeds = randomFeeds(g, 11);
  feeds["ids"].ints = {1, 4, 0};  // labels 0, 3 and -1 (NLL ignores -1; cross-entropy does not)
  feeds["shift"].ints = {1};
  expectError([&] { CpuExecutor(g, {}).run(feeds); }, ErrorKind::kInvalidInput,
              "op 'loss': label -1 of row 2 is not a class id in [0, 4)");
  expectError([&] { onHost(g, feeds); }, ErrorKind::kInvalidInput,
              "op 'loss': label -1 of row 2 is not a class id in [0, 4)");
  feeds["ids"].ints = {1, 4, 2};  // labels 0, 3, 1
  expectLikeCpu(g, feeds);

  ir::Graph n;  // NLL alone: an ignored label is not an error, one out of range is
  const int scores = n.softmax("logp", n.addInput("x", {3, 4}, DType::kF32, ir::TensorRole::kInput), 1, true);
  const int targets =
      n.binary(ir::OpType::kSub, "labels", n.addInput("ids", {3}, DType::kInt64, ir::TensorRole::kInput),
               n.addInput("shift", {1}, DType::kInt64, ir::TensorRole::kInput));
  n.markOutput(n.nllLoss("nll", scores, targets, -1, ir::Reduction::kMean, -1));
  n.markOutput(n.nllLossGrad("nll.grad", n.ops().back()));
  Feeds nll_feeds = randomFeeds(n, 12);
  nll_feeds["shift"].ints = {1};
  nll_feeds["ids"].ints = {1, 0, 4};  // labels 0, -1 (ignored), 3
  expectLikeCpu(n, nll_feeds);
  nll_feeds["ids"].ints = {1, 8, 4};  // label 7
  const std::string problem = "op 'nll': label 7 at position 1 is not a class id in [0, 4)";
  expectError([&] { CpuExecutor(n, {}).run(nll_feeds); }, ErrorKind::kInvalidInput, problem);
  expectError([&] { onHost(n, nll_feeds); }, ErrorKind::kInvalidInput, problem);
}

// An integer Div truncates toward zero, wraps INT64_MIN / -1 (which traps on x86) and reports
// a zero divisor from its kernel: after the run, the CPU executor's error, naming the op.
TEST(CudaHostDevice, DividesIntegersAndReportsADivisionByZero) {
  ir::Graph g;
  const int a = g.addInput("a", {5}, DType::kInt64, ir::TensorRole::kInput);
  const int b = g.addInput("b", {5}, DType::kInt64, ir::TensorRole::kInput);
  const int q = g.binary(ir::OpType::kDiv, "idiv", a, b);
  g.markOutput(q);
  Feeds feeds{{"a", {{5}, DType::kInt64, {}, {7, -7, 7, INT64_MIN, 0}}},
              {"b", {{5}, DType::kInt64, {}, {2, 2, -3, -1, 5}}}};
  const TimedRun run = onHost(g, feeds);
  EXPECT_EQ(run.values[static_cast<size_t>(q)].ints, (std::vector<int64_t>{3, -3, -2, INT64_MIN, 0}));
  expectLikeCpu(g, feeds);
  feeds["b"].ints[2] = 0;
  expectError([&] { CpuExecutor(g, {}).run(feeds); }, ErrorKind::kInvalidInput, "op 'idiv': integer division by zero");
  expectError([&] { onHost(g, feeds); }, ErrorKind::kInvalidInput, "op 'idiv': integer division by zero");
}

// int8 x int8 sums are exact int32 sums, wrapped past int32's range as the CPU executor's (and the
// MXU's) are: 140000 products of 127 x 127 add up to 2258060000, which is -2036907296 in int32;
// 140000 of -128 x -128 to 2293760000, which is -2001207296.
TEST(CudaHostDevice, SumsInt8ProductsExactlyAndWrapsThemPastInt32AsTheCpuDoes) {
  constexpr int64_t kTerms = 140000;
  ir::Graph g;
  const int a = g.addInput("a", {1, kTerms}, DType::kInt8, ir::TensorRole::kInput);
  const int b = g.addWeight("b", {kTerms, 1}, DType::kInt8);
  const int product = g.matmul("mm", a, b, false, false);
  const int x = g.addInput("x", {1, 1, 1, kTerms}, DType::kInt8, ir::TensorRole::kInput);
  const int w = g.addWeight("w", {1, 1, 1, kTerms}, DType::kInt8);
  const int conv = g.conv("conv", x, w, ir::ConvGeometry{});
  g.markOutput(product);
  g.markOutput(conv);
  const auto filled = [](const ir::Shape& shape, int64_t value) {
    return ir::TensorValue{shape, DType::kInt8, {}, std::vector<int64_t>(static_cast<size_t>(kTerms), value)};
  };
  const Feeds feeds{{"a", filled({1, kTerms}, 127)},
                    {"b", filled({kTerms, 1}, 127)},
                    {"x", filled({1, 1, 1, kTerms}, -128)},
                    {"w", filled({1, 1, 1, kTerms}, -128)}};
  const TimedRun run = onHost(g, feeds);
  EXPECT_EQ(run.values[static_cast<size_t>(product)].ints, std::vector<int64_t>{-2036907296});
  EXPECT_EQ(run.values[static_cast<size_t>(conv)].ints, std::vector<int64_t>{-2001207296});
  expectLikeCpu(g, feeds);
}

// What the GPU runs around cuBLAS's int8 GEMM: the int8 operands (held as int64) packed into
// bytes, and its int32 sums widened back.
TEST(CudaHostDevice, PacksInt8OperandsIntoBytesAndWidensInt32SumsBack) {
  std::vector<int64_t> held{-128, 127, 0, -1};
  std::vector<int8_t> packed(held.size());
  const cuda::PackInt8Kernel pack{{held.data(), cuda::Elem::kI8}, packed.data()};
  for (int64_t i = 0; i < 4; ++i) pack(i);
  EXPECT_EQ(packed, (std::vector<int8_t>{-128, 127, 0, -1}));
  std::vector<int32_t> sums{INT32_MIN, -1, INT32_MAX, 7};
  std::vector<int64_t> widened(sums.size());
  const cuda::WidenInt32Kernel widen{sums.data(), {widened.data(), cuda::Elem::kI32}};
  for (int64_t i = 0; i < 4; ++i) widen(i);
  EXPECT_EQ(widened, (std::vector<int64_t>{INT32_MIN, -1, INT32_MAX, 7}));
}

// report.json's per_op[].kernel: what ran each op. On the host device, the CPU executor's loops
// stand in for cuBLAS and cuDNN, and the project's kernels run as they would on a GPU.
// An empty tensor's bytes are an empty std::vector, whose data() may be null: copying no bytes
// from or to it is no copy at all (memcpy with a null pointer is undefined even for 0 bytes;
// found by UBSan, scripts/sanitize.sh, in the ONNX node suite).
TEST(CudaHostDevice, CopiesOfNoBytesTakeNullPointers) {
  cuda::HostDevice device;
  void* buffer = device.allocate(0);
  device.upload(buffer, nullptr, 0);
  device.download(nullptr, buffer, 0);
  device.zero(nullptr, 0);
}

TEST(CudaHostDevice, NamesWhatRunsEachOp) {
  ir::Graph step;
  const int a = step.addInput("a", {2, 3}, DType::kF32, ir::TensorRole::kInput);
  const int sum = step.add("add", step.matmul("mm", a, step.addWeight("w", {3, 3}, DType::kF32), false, false), a);
  step.markOutput(step.reshape("flat", sum, {6}));
  step.markOutput(step.matmul("mm.int8", step.addInput("i", {2, 5}, DType::kInt8, ir::TensorRole::kInput),
                              step.addWeight("j", {5, 2}, DType::kInt8), false, false));
  const int image = step.addInput("image", {1, 2, 6, 6}, DType::kF32, ir::TensorRole::kInput);
  const int filter = step.addWeight("filter", {2, 2, 3, 3}, DType::kF32);
  ir::ConvGeometry even;
  even.pads = {1, 1, 1, 1};
  step.markOutput(step.conv("conv", image, filter, even));
  ir::ConvGeometry same;
  same.strides = {2, 2};
  same.pads = {0, 0, 1, 1};
  step.markOutput(step.conv("conv.same", image, filter, same));
  ir::PoolGeometry pool;
  pool.kernel = {2, 2};
  pool.strides = {2, 2};
  pool.pads = {0, 0, 0, 0};
  pool.dilations = {1, 1};
  step.markOutput(step.pool("pool", image, pool));
  const TimedRun run = onHost(step, randomFeeds(step, 5));
  ASSERT_EQ(run.op_kernels.size(), step.ops().size());
  std::map<std::string, std::string> kernels;
  for (size_t i = 0; i < step.ops().size(); ++i) kernels[step.ops()[i].name] = run.op_kernels[i];
  EXPECT_EQ(kernels["mm"], "host: the CPU executor's GEMM loop (in place of cuBLAS)");
  EXPECT_EQ(kernels["add"], "tpusim kernel");
  EXPECT_EQ(kernels["flat"], "none: its output aliases its input");
  EXPECT_EQ(kernels["mm.int8"], "tpusim int8 GEMM kernel");
  EXPECT_EQ(kernels["conv"], "host: the CPU executor's convolution loops (in place of cuDNN)");
  EXPECT_EQ(kernels["conv.same"],
            "host: the CPU executor's convolution loops (in place of cuDNN), with a tpusim copy for the uneven pads");
  EXPECT_EQ(kernels["pool"], "tpusim pooling kernel");
  EXPECT_TRUE(CpuExecutor(step, {}).runTimed(randomFeeds(step, 5), {0, 1}).op_kernels.empty());
}

TEST(CudaHostDevice, RefusesWhatTheGpuCannotRunNamingTheOp) {
  ir::Graph f64;
  const int x = f64.addInput("x", {4}, DType::kF64, ir::TensorRole::kInput);
  f64.markOutput(f64.relu("relu", x));
  expectError([&] { CudaExecutor{f64}; }, ErrorKind::kUnsupported, "op 'relu' (Relu): f64 tensors are CPU only");
  ir::Graph reduce;
  const int rx = reduce.addInput("x", {4}, DType::kF32, ir::TensorRole::kInput);
  reduce.markOutput(reduce.allReduce("ar", rx, ir::Reduction::kSum, 2));
  expectError([&] { CudaExecutor{reduce}; }, ErrorKind::kUnsupported,
              "op 'ar' (AllReduce): all-reduce across 2 replicas, and the CUDA reference runs 1 (tpusim reference "
              "--replicas)");
}

TEST(CudaHostDevice, ChecksLabelsAndIndicesBeforeAnyKernelReadsThem) {
  ir::Graph g;
  const int logits = g.addInput("logits", {2, 3}, DType::kF32, ir::TensorRole::kInput);
  const int labels = g.addInput("labels", {2}, DType::kInt64, ir::TensorRole::kLabel);
  g.markOutput(g.softmaxCrossEntropy("loss", logits, labels));
  const int table = g.addWeight("table", {4, 2}, DType::kF32);
  const int ids = g.addInput("ids", {3}, DType::kInt64, ir::TensorRole::kInput);
  g.markOutput(g.gather("rows", table, ids, 0));
  Feeds feeds = randomFeeds(g, 9);
  feeds["labels"].ints = {0, 3};
  feeds["ids"].ints = {0, 1, 2};
  expectError([&] { onHost(g, feeds); }, ErrorKind::kInvalidInput, "op 'loss': label 3 of row 1 is not a class id in [0, 3)");
  feeds["labels"].ints = {0, 2};
  feeds["ids"].ints = {0, -5, 2};
  expectError([&] { onHost(g, feeds); }, ErrorKind::kInvalidInput,
              "op 'rows': index -5 is out of range for a dimension of 4");
}

// Indices computed in the step (as DLRM picks each table's ids out of one feature tensor) are
// checked by the gather's kernels: in range, the CPU executor's bits; out of range, the CPU
// executor's error, naming the op and the first bad index.
TEST(CudaHostDevice, GathersByComputedIndicesAndChecksThemOnTheDevice) {
  ir::Graph g;
  const int table = g.addWeight("table", {5, 3}, DType::kF32);
  const int features = g.addInput("features", {2, 4}, DType::kInt64, ir::TensorRole::kInput);
  const int column = g.addInput("column", {1}, DType::kInt64, ir::TensorRole::kInput);
  const int picked = g.gather("picked", features, column, 1);  // [2, 1]: computed ids
  const int ids =
      g.binary(ir::OpType::kSub, "shifted", picked, g.addInput("one", {1}, DType::kInt64, ir::TensorRole::kInput));
  const int rows = g.gather("rows", table, ids, 0);  // [2, 1, 3]
  g.markOutput(rows);
  const int dy = g.addInput("dy", g.tensor(rows).shape, DType::kF32, ir::TensorRole::kInput);
  g.markOutput(g.gatherGrad("rows.grad", dy, ids, {5, 3}, 0));
  Feeds feeds = randomFeeds(g, 4);
  feeds["features"].ints = {9, 4, 0, 7, 1, 5, 2, 8};
  feeds["column"].ints = {1};
  feeds["one"].ints = {1};
  expectLikeCpu(g, feeds);     // ids 3 and 4
  feeds["column"].ints = {3};  // ids 6 and 7: out of range for 5 rows
  const std::string problem = "op 'rows': index 6 is out of range for a dimension of 5";
  expectError([&] { CpuExecutor(g, {}).run(feeds); }, ErrorKind::kInvalidInput, problem);
  expectError([&] { onHost(g, feeds); }, ErrorKind::kInvalidInput, problem);
  feeds["column"].ints = {1};
  feeds["one"].ints = {5};  // ids -1 and 0: -1 counts from the end, as on the CPU
  expectLikeCpu(g, feeds);
}

// Data parallel over two host devices (the simulator's data-parallel graph): each replica's
// gradients are the CPU executor's for its inputs, the all-reduce leaves their float sum on
// both, and both replicas end the step with the same weights and optimizer state.
TEST(CudaHostDevice, RunsDataParallelReplicasWithTheirGradientsSummedAcrossThem) {
  RunRequest request;
  request.model_path = tpusim::testing::sourceDir() + "/traces/mlp.onnx";
  request.batch = 4;
  request.optimizer = "adam";
  const ModelGraph built = buildModelGraph(request);
  const ir::Graph graph = allReduceGradients(built.graph, 2);
  std::vector<Feeds> feeds;
  for (uint64_t seed : {5, 6}) {
    const NamedValues inputs = generatedInputs(built, seed);
    feeds.push_back(completeFeeds(built, {inputs.begin(), inputs.end()}));
  }
  cuda::DeviceGroup group;
  for (int r = 0; r < 2; ++r) group.devices.push_back(std::make_unique<cuda::HostDevice>());
  group.collective = std::make_unique<cuda::HostCollective>();
  const std::vector<TimedRun> runs = CudaExecutor(graph, 2).runReplicasOn(group, feeds, {0, 1});
  ASSERT_EQ(runs.size(), 2u);
  int reduced = 0;
  for (size_t o = 0; o < graph.ops().size(); ++o) {
    const ir::Op& op = graph.ops()[o];
    if (op.type != ir::OpType::kAllReduce) continue;
    ++reduced;
    EXPECT_EQ(runs[1].op_kernels[o], "host: float sums in replica order (in place of NCCL)") << op.name;
    // Each replica's gradient differs (other inputs); the reduced one is their sum, the same on both.
    const auto in = static_cast<size_t>(op.inputs[0]), out = static_cast<size_t>(op.outputs[0]);
    EXPECT_NE(runs[0].values[in].floats, runs[1].values[in].floats) << op.name;
    EXPECT_EQ(runs[0].values[out].floats, runs[1].values[out].floats) << op.name;
    for (size_t i = 0; i < runs[0].values[out].floats.size(); ++i) {
      const float sum = static_cast<float>(runs[0].values[in].floats[i]) + static_cast<float>(runs[1].values[in].floats[i]);
      ASSERT_EQ(runs[0].values[out].floats[i], static_cast<double>(sum)) << op.name << "[" << i << "]";
    }
  }
  EXPECT_EQ(reduced, 6);  // the mlp's three weights and three biases
  for (int id : stepOutputIds(graph)) {
    if (graph.tensor(id).role != ir::TensorRole::kWeight && graph.tensor(id).role != ir::TensorRole::kOptimizerState)
      continue;
    EXPECT_EQ(runs[0].values[static_cast<size_t>(id)].floats, runs[1].values[static_cast<size_t>(id)].floats)
        << graph.tensor(id).name;
  }
  // Before the all-reduce, replica 0 computed what one replica computes: the CPU executor's
  // bits for the single-replica graph fed replica 0's inputs. (Both replicas' weights being
  // equal above shows each optimizer read the summed gradients, not its own.)
  const std::vector<ir::TensorValue> single = CpuExecutor(built.graph, {}).run(feeds[0]);
  for (const ir::Op& op : graph.ops()) {
    if (op.type != ir::OpType::kAllReduce) continue;
    const ir::Tensor& gradient = graph.tensor(op.inputs[0]);
    int in_single = -1;
    for (const ir::Tensor& t : built.graph.tensors()) in_single = t.name == gradient.name ? t.id : in_single;
    ASSERT_GE(in_single, 0) << gradient.name;
    EXPECT_EQ(runs[0].values[static_cast<size_t>(gradient.id)].floats, single[static_cast<size_t>(in_single)].floats)
        << gradient.name;
  }
  expectError([&] { CudaExecutor(graph, 3); }, ErrorKind::kUnsupported,
              "all-reduce across 2 replicas, and the CUDA reference runs 3 (tpusim reference --replicas)");
}

TEST(CudaHostDevice, ReportsTheMemoryItsBuffersTake) {
  ir::Graph g;
  const int a = g.addInput("a", {8, 16}, DType::kBF16, ir::TensorRole::kInput);  // 2 bytes an element
  g.markOutput(g.relu("relu", a));
  EXPECT_EQ(onHost(g, randomFeeds(g, 10)).device_peak_bytes, 2u * 8 * 16 * 2);
}

// Kept: the tensors `tpusim reference` reads (the step's outputs); the rest stay on the device.
TEST(CudaHostDevice, CopiesBackOnlyTheTensorsItIsAskedToKeep) {
  for (const OpCase& c : cudaOpCases()) {
    // Training steps with optimizer state among the outputs, in each precision, and a forward graph.
    if (c.name.find("adam") == std::string::npos && c.name.find("convolutions and pools") == std::string::npos) {
      continue;
    }
    SCOPED_TRACE(c.name);
    const std::vector<int> keep = stepOutputIds(c.graph);
    cuda::HostDevice device;
    const TimedRun kept = CudaExecutor(c.graph, 1, keep).runTimedOn(device, c.feeds, {0, 1});
    const TimedRun every = onHost(c.graph, c.feeds);
    ASSERT_EQ(kept.values.size(), every.values.size());
    for (const ir::Tensor& t : c.graph.tensors()) {
      const ir::TensorValue& value = kept.values[static_cast<size_t>(t.id)];
      if (std::find(keep.begin(), keep.end(), t.id) == keep.end()) {
        EXPECT_TRUE(value.floats.empty() && value.ints.empty()) << t.name << " was copied back";
        continue;
      }
      const ir::TensorValue& expected = every.values[static_cast<size_t>(t.id)];
      EXPECT_EQ(value.shape, t.shape) << t.name;
      EXPECT_EQ(value.ints, expected.ints) << t.name;
      ASSERT_EQ(value.floats.size(), expected.floats.size()) << t.name;
      for (size_t i = 0; i < value.floats.size(); ++i) {
        EXPECT_TRUE(sameBits(value.floats[i], expected.floats[i])) << t.name << "[" << i << "]";
      }
    }
  }
  ir::Graph g;
  g.markOutput(g.relu("relu", g.addInput("a", {2}, DType::kF32, ir::TensorRole::kInput)));
  expectError([&] { CudaExecutor(g, 1, std::vector<int>{7}); }, ErrorKind::kInternal, "kept tensor id 7");
}

}  // namespace
}  // namespace tpusim::reference
