// The reference executor with the MXU's numerics (mxu_gemm.hpp): a matmul
// gives mxuMatmul's bits, and convolutions with strides, padding, dilation and
// groups, forward and both gradients, map to the right GEMMs (f32 HIGHEST
// agrees with the direct f32 kernels to 1e-5; one bf16 pass only to 1e-2).
#include <bit>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "reference/cpu/cpu_executor.hpp"
#include "sim/common/matmul_numerics.hpp"

namespace tpusim::reference {
namespace {

ir::TensorValue randomValue(const ir::Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  ir::TensorValue value = ir::TensorValue::zeros(shape, DType::kF32);
  for (double& v : value.floats) v = uniform(rng);
  return value;
}

CpuOptions mxuOptions(numerics::MatmulPrecision precision, Dataflow dataflow = Dataflow::kWeightStationary) {
  return CpuOptions{1, MxuNumericsOptions{dataflow, 16, precision}};
}

TEST(MxuGemm, AMatmulGivesTheMxuNumericsBits) {
  for (Dataflow dataflow : {Dataflow::kWeightStationary, Dataflow::kOutputStationary}) {
    ir::Graph g;
    const int a = g.addInput("a", {20, 45}, DType::kF32, ir::TensorRole::kInput);
    const int b = g.addInput("b", {33, 45}, DType::kF32, ir::TensorRole::kInput);  // used transposed
    const int y = g.matmul("y", a, b, false, true);
    g.markOutput(y);
    std::mt19937 rng(5);
    std::map<std::string, ir::TensorValue> feeds{{"a", randomValue({20, 45}, rng)}, {"b", randomValue({33, 45}, rng)}};
    const auto values = CpuExecutor(g, mxuOptions(numerics::MatmulPrecision::kHigh, dataflow)).run(feeds);
    std::vector<float> lhs(feeds["a"].floats.begin(), feeds["a"].floats.end()), rhs(45 * 33), out(20 * 33);
    for (int k = 0; k < 45; ++k) {
      for (int n = 0; n < 33; ++n) rhs[k * 33 + n] = static_cast<float>(feeds["b"].floats[n * 45 + k]);
    }
    numerics::MatmulNumerics config;
    config.lhs_dtype = config.rhs_dtype = DType::kF32;
    config.precision = numerics::MatmulPrecision::kHigh;
    config.dataflow = dataflow;
    config.rows = 16;
    numerics::mxuMatmul(config, lhs, rhs, out, 20, 45, 33);
    const ir::TensorValue& got = values[static_cast<size_t>(y)];
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(static_cast<float>(got.floats[i])), std::bit_cast<uint32_t>(out[i])) << i;
    }
  }
}

// int8 x int8 into int32, batched: a transposed per item ([3, 7, 5] read as [3, 5, 7]), b one
// matrix for every item. The sums are exact: a direct triple loop in int64 gives them.
TEST(MxuGemm, Int8MatmulsSumExactlyWithTransposedAndSharedOperands) {
  ir::Graph g;
  const int a = g.addInput("a", {3, 7, 5}, DType::kInt8, ir::TensorRole::kInput);
  const int b = g.addInput("b", {7, 4}, DType::kInt8, ir::TensorRole::kInput);
  const int y = g.matmul("y", a, b, true, false);
  g.markOutput(y);
  std::mt19937 rng(9);
  std::uniform_int_distribution<int> byte(-128, 127);
  ir::TensorValue av = ir::TensorValue::zeros({3, 7, 5}, DType::kInt8),
                  bv = ir::TensorValue::zeros({7, 4}, DType::kInt8);
  for (int64_t& v : av.ints) v = byte(rng);
  for (int64_t& v : bv.ints) v = byte(rng);
  av.ints[0] = bv.ints[0] = -128;  // the extreme product, 16384
  const ir::TensorValue got = CpuExecutor(g, {}).run({{"a", av}, {"b", bv}})[static_cast<size_t>(y)];
  ASSERT_EQ(got.dtype, DType::kInt32);
  for (int item = 0; item < 3; ++item) {
    for (int i = 0; i < 5; ++i) {
      for (int j = 0; j < 4; ++j) {
        int64_t sum = 0;
        for (int k = 0; k < 7; ++k) sum += av.ints[(item * 7 + k) * 5 + i] * bv.ints[k * 4 + j];
        EXPECT_EQ(got.ints[(item * 5 + i) * 4 + j], sum) << item << " " << i << " " << j;
      }
    }
  }
}

// max |mxu - direct| / max |direct| over the output.
double normwiseError(const ir::TensorValue& mxu, const ir::TensorValue& direct) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < direct.floats.size(); ++i) {
    worst = std::max(worst, std::abs(mxu.floats[i] - direct.floats[i]));
    scale = std::max(scale, std::abs(direct.floats[i]));
  }
  return worst / scale;
}

TEST(MxuGemm, ConvolutionsAndTheirGradientsMapToTheirGemms) {
  ir::ConvGeometry geometry;
  geometry.strides = {2, 1};
  geometry.pads = {1, 2, 0, 1};
  geometry.dilations = {1, 2};
  geometry.group = 2;
  const ir::Shape x_shape{2, 4, 9, 8}, w_shape{6, 2, 3, 3};
  ir::Graph g;
  const int x = g.addInput("x", x_shape, DType::kF32, ir::TensorRole::kInput);
  const int w = g.addInput("w", w_shape, DType::kF32, ir::TensorRole::kInput);
  const int y = g.conv("y", x, w, geometry);
  const ir::Shape y_shape = g.tensor(y).shape;
  const int dy = g.addInput("dy", y_shape, DType::kF32, ir::TensorRole::kInput);
  const int dx = g.convGradInput("dx", dy, w, x_shape, geometry);
  const int dw = g.convGradWeight("dw", x, dy, w_shape, geometry);
  for (int out : {y, dx, dw}) g.markOutput(out);
  std::mt19937 rng(11);
  const std::map<std::string, ir::TensorValue> feeds{
      {"x", randomValue(x_shape, rng)}, {"w", randomValue(w_shape, rng)}, {"dy", randomValue(y_shape, rng)}};
  const auto direct = CpuExecutor(g, CpuOptions{1, std::nullopt}).run(feeds);
  const auto highest = CpuExecutor(g, mxuOptions(numerics::MatmulPrecision::kHighest)).run(feeds);
  const auto one_pass = CpuExecutor(g, mxuOptions(numerics::MatmulPrecision::kDefault)).run(feeds);
  for (int out : {y, dx, dw}) {
    const auto i = static_cast<size_t>(out);
    EXPECT_LT(normwiseError(highest[i], direct[i]), 1e-5) << g.tensor(out).name;
    const double bf16 = normwiseError(one_pass[i], direct[i]);
    EXPECT_LT(bf16, 1e-2) << g.tensor(out).name;
    EXPECT_GT(bf16, 1e-5) << g.tensor(out).name;  // one bf16 pass does round the inputs
  }
  // Threads split each GEMM's rows: the bits stay those of one thread.
  for (int threads : {2, 3}) {
    CpuOptions options = mxuOptions(numerics::MatmulPrecision::kHighest);
    options.threads = threads;
    const auto threaded = CpuExecutor(g, options).run(feeds);
    for (int out : {y, dx, dw}) {
      const auto i = static_cast<size_t>(out);
      EXPECT_EQ(threaded[i].floats, highest[i].floats) << g.tensor(out).name << " with " << threads << " threads";
    }
  }
}

}  // namespace
}  // namespace tpusim::reference
