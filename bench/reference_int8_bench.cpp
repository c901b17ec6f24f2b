// The CPU reference executor's int8 x int8 products into int32 (reference/cpu/mxu_gemm.hpp,
// --precision int8): traces/mlp.onnx's first layer at batch 8 (8 x 784 by a transposed
// 512 x 784 weight) and a ResNet-50 layer2 3x3 convolution (batch 2, 128 channels, 28 x 28).
// Each iteration is one mxuCompute call, as the executor makes it per op: packing the
// operands, the sums, and writing the result, on 1 or 2 threads (the argument).
// Run: build/bench/reference_int8_bench (quote medians and the machine).
#include <benchmark/benchmark.h>

#include <random>

#include "reference/cpu/mxu_gemm.hpp"

namespace {

using tpusim::DType;
using tpusim::ir::Shape;
using tpusim::ir::TensorValue;

TensorValue randomInt8(const Shape& shape) {
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> values(-128, 127);
  TensorValue value = TensorValue::zeros(shape, DType::kInt8);
  for (int64_t& v : value.ints) v = values(rng);
  return value;
}

void product(benchmark::State& state, const tpusim::ir::Op& op, const Shape& a, const Shape& b, const Shape& y,
             double macs) {
  const TensorValue lhs = randomInt8(a), rhs = randomInt8(b);
  for (auto _ : state) {
    TensorValue out = TensorValue::zeros(y, DType::kInt32);
    tpusim::reference::mxuCompute(op, {&lhs, &rhs}, out, {}, static_cast<int>(state.range(0)));
    benchmark::DoNotOptimize(out.ints.data());
  }
  state.counters["GMAC/s"] = benchmark::Counter(macs * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void mlpLayer(benchmark::State& state) {
  tpusim::ir::Op op;
  op.type = tpusim::ir::OpType::kMatMul;
  op.transpose_b = true;
  product(state, op, {8, 784}, {512, 784}, {8, 512}, 8.0 * 784 * 512);
}

void resnetConv(benchmark::State& state) {
  tpusim::ir::Op op;
  op.type = tpusim::ir::OpType::kConv;
  op.conv.pads = {1, 1, 1, 1};
  product(state, op, {2, 128, 28, 28}, {128, 128, 3, 3}, {2, 128, 28, 28}, 2.0 * 128 * 28 * 28 * 128 * 9);
}

}  // namespace

BENCHMARK(mlpLayer)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(resnetConv)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
