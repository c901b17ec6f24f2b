// MXU timing speed. The closed form on every MXU instruction of one training
// step of ResNet-50 and of BERT-base at batch 128 (128 x 128 arrays, tpuv4),
// the PE-by-PE mode's PE-cycles per second, and one large GEMM PE by PE.
// Run: build/bench/mxu_bench (figures depend on the machine; quote medians).
#include <benchmark/benchmark.h>

#include <random>
#include <set>

#include "api/session.hpp"
#include "sim/mxu/array_timing.hpp"
#include "sim/mxu/mxu.hpp"
#include "sim/mxu/pe_array.hpp"

namespace {

struct Workload {
  std::vector<tpusim::MatmulShape> instructions;
  uint64_t ops = 0;  // IR ops on the MXU
};

Workload mxuWorkload(const std::string& model) {
  tpusim::RunRequest request;
  request.model_path = std::string(TPUSIM_SOURCE_DIR) + "/traces/" + model;
  request.batch = 128;
  const tpusim::HardwareParams hw = tpusim::resolveHardware(request);
  const tpusim::program::Program program = tpusim::compileRequest(request, hw);
  Workload w;
  std::set<std::string> ops;
  for (const auto& ins : program.chips(0).instructions()) {
    if (!ins.has_matmul()) continue;
    w.instructions.push_back(tpusim::matmulShapeOf(ins.matmul()));
    ops.insert(ins.op());
  }
  w.ops = ops.size();
  return w;
}

void closedForm(benchmark::State& state, const std::string& model) {
  const Workload w = mxuWorkload(model);
  const tpusim::ArrayConfig array;  // 128 x 128, weight stationary, double-buffered
  uint64_t cycles = 0;
  for (auto _ : state) {
    for (const tpusim::MatmulShape& shape : w.instructions) cycles += tpusim::arrayTiming(array, shape).cycles;
    benchmark::DoNotOptimize(cycles);
  }
  const auto per = [](uint64_t count) {
    return benchmark::Counter(static_cast<double>(count),
                              benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  };
  state.counters["instructions"] = static_cast<double>(w.instructions.size());
  state.counters["s_per_instruction"] = per(w.instructions.size());
  state.counters["s_per_op"] = per(w.ops);
}

void BM_ClosedFormResNet50Batch128(benchmark::State& state) {
  closedForm(state, "resnet50.onnx");
}
BENCHMARK(BM_ClosedFormResNet50Batch128)->Unit(benchmark::kMillisecond);

void BM_ClosedFormBertBaseBatch128(benchmark::State& state) {
  closedForm(state, "bert_base.onnx");
}
BENCHMARK(BM_ClosedFormBertBaseBatch128)->Unit(benchmark::kMillisecond);

// A 64 x 64 x 64 matmul on an R x R array, PE by PE, with values.
void BM_PeByPe(benchmark::State& state) {
  const auto edge = static_cast<uint64_t>(state.range(0));
  const tpusim::ArrayConfig array{edge, edge, tpusim::Dataflow::kWeightStationary, true};
  const tpusim::MatmulShape shape{64, 64, 64, 1};
  const std::vector<float> lhs(64 * 64, 0.5f), rhs(64 * 64, 0.25f);
  uint64_t pe_cycles = 0;
  for (auto _ : state) {
    const tpusim::PeArrayRun run = tpusim::simulatePeArray(array, shape, {{lhs, rhs}});
    pe_cycles += run.timing.cycles * edge * edge;
    benchmark::DoNotOptimize(run.out.data());
  }
  state.counters["PE-cycles/s"] = benchmark::Counter(static_cast<double>(pe_cycles), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PeByPe)->Arg(16)->Arg(64)->Unit(benchmark::kMillisecond);

// One M x K x N GEMM on a 128 x 128 weight-stationary, double-buffered array,
// PE by PE (issue 32: "PE-by-PE 2048x8192x2048 on 128x128", 34 billion
// PE-cycles). The Zeros runs are what mxu.timing=pe_by_pe does for an MXU
// instruction (it times the array on zeros); WithValues also computes the
// product from random operands. One iteration each: quote the median of
// --benchmark_repetitions=3.
void peByPeGemm(benchmark::State& state, bool values) {
  const tpusim::ArrayConfig array;
  const auto dim = [&](int i) { return static_cast<uint64_t>(state.range(i)); };
  const tpusim::MatmulShape shape{dim(0), dim(1), dim(2), 1};
  std::vector<float> lhs, rhs;
  std::vector<tpusim::PassOperands> passes;
  if (values) {
    std::mt19937 rng(32);
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    lhs.resize(shape.m * shape.k);
    rhs.resize(shape.k * shape.n);
    for (float& v : lhs) v = value(rng);
    for (float& v : rhs) v = value(rng);
    passes.push_back({lhs, rhs});
  }
  uint64_t pe_cycles = 0;
  for (auto _ : state) {
    const tpusim::PeArrayRun run = tpusim::simulatePeArray(array, shape, passes);
    pe_cycles += run.timing.cycles * array.rows * array.cols;
    benchmark::DoNotOptimize(run.out.data());
  }
  state.counters["PE-cycles/s"] = benchmark::Counter(static_cast<double>(pe_cycles), benchmark::Counter::kIsRate);
}

void BM_PeByPeGemmZeros(benchmark::State& state) {
  peByPeGemm(state, false);
}
BENCHMARK(BM_PeByPeGemmZeros)
    ->Args({512, 2048, 512})
    ->Args({2048, 8192, 2048})
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

void BM_PeByPeGemmWithValues(benchmark::State& state) {
  peByPeGemm(state, true);
}
BENCHMARK(BM_PeByPeGemmWithValues)
    ->Args({512, 2048, 512})
    ->Args({2048, 8192, 2048})
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
