#include "tests/reference/cuda_op_cases.hpp"

#include <cmath>
#include <random>
#include <tuple>

#include "api/functional.hpp"
#include "api/session.hpp"
#include "sim/common/numerics.hpp"
#include "tests/support/source_dir.hpp"

namespace tpusim::reference {

Feeds randomFeeds(const ir::Graph& graph, unsigned seed, double low, double high) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(low, high);
  Feeds feeds;
  for (const ir::Tensor& tensor : graph.tensors()) {
    if (graph.producer(tensor.id) != nullptr) continue;
    ir::TensorValue value = ir::TensorValue::zeros(tensor.shape, tensor.dtype);
    for (double& v : value.floats) v = numerics::roundTo(tensor.dtype, uniform(rng));
    for (int64_t& v : value.ints) v = static_cast<int64_t>(std::floor(uniform(rng)));
    feeds[tensor.name] = std::move(value);
  }
  return feeds;
}

namespace {

OpCase elementwiseOps() {
  ir::Graph g;
  const int a = g.addInput("a", {2, 3, 4}, DType::kF32, ir::TensorRole::kInput);
  const int b = g.addInput("b", {3, 1}, DType::kF32, ir::TensorRole::kInput);
  const int i = g.addInput("i", {2, 1, 4}, DType::kInt32, ir::TensorRole::kInput);
  const int j = g.addInput("j", {4}, DType::kInt32, ir::TensorRole::kInput);
  for (ir::OpType type : {ir::OpType::kAdd, ir::OpType::kSub, ir::OpType::kMul, ir::OpType::kDiv, ir::OpType::kMaximum,
                          ir::OpType::kMinimum}) {
    g.markOutput(g.binary(type, std::string(ir::opTypeName(type)), a, b));
    if (type != ir::OpType::kDiv) g.markOutput(g.binary(type, std::string(ir::opTypeName(type)) + ".int", i, j));
  }
  g.markOutput(
      g.binary(ir::OpType::kDiv, "Div.int", i, g.addInput("nonzero", {4}, DType::kInt32, ir::TensorRole::kInput)));
  const int less = g.compare(ir::CompareDirection::kLt, "less", a, b);
  g.markOutput(g.where("where", less, a, g.scale("half", b, 0.5)));
  g.markOutput(g.compare(ir::CompareDirection::kGe, "ge.int", i, j));
  g.markOutput(g.pow("pow", g.unary(ir::UnaryKind::kAbs, "abs", a), b));
  g.markOutput(g.pow("pow.int", i, j));  // exact, not a double pow (numerics::integerPow)
  Feeds feeds = randomFeeds(g, 1, -3, 3);
  feeds["nonzero"].ints = {3, -2, 1, -1};
  return {"elementwise ops, broadcast, on floats and integers", g, feeds};
}

OpCase unaryOps() {
  ir::Graph g;
  const int x = g.addInput("x", {5, 7}, DType::kF32, ir::TensorRole::kInput);
  const int dy = g.addInput("dy", {5, 7}, DType::kF32, ir::TensorRole::kInput);
  for (ir::UnaryKind kind :
       {ir::UnaryKind::kAbs,  ir::UnaryKind::kErf,        ir::UnaryKind::kExp,     ir::UnaryKind::kLog,
        ir::UnaryKind::kNeg,  ir::UnaryKind::kReciprocal, ir::UnaryKind::kSigmoid, ir::UnaryKind::kSqrt,
        ir::UnaryKind::kTanh, ir::UnaryKind::kRound,      ir::UnaryKind::kFloor,   ir::UnaryKind::kCeil,
        ir::UnaryKind::kSign, ir::UnaryKind::kSin,        ir::UnaryKind::kCos,     ir::UnaryKind::kTan,
        ir::UnaryKind::kAsin, ir::UnaryKind::kAcos,       ir::UnaryKind::kAtan,    ir::UnaryKind::kSinh,
        ir::UnaryKind::kCosh, ir::UnaryKind::kAsinh,      ir::UnaryKind::kAcosh,   ir::UnaryKind::kAtanh}) {
    const std::string name = ir::unaryKindName(kind);
    const int y = g.unary(kind, name, x);
    g.markOutput(g.unaryGrad(kind, name + ".grad", dy, x, y));
  }
  // The kinds with attributes, at values other than their defaults.
  for (const auto& [kind, alpha, gamma] :
       {std::tuple{ir::UnaryKind::kLeakyRelu, 0.2, 1.0}, std::tuple{ir::UnaryKind::kElu, 0.5, 1.0},
        std::tuple{ir::UnaryKind::kSelu, 1.5, 1.25}}) {
    const std::string name = ir::unaryKindName(kind);
    const int y = g.unary(kind, name, x, alpha, gamma);
    g.markOutput(g.unaryGrad(kind, name + ".grad", dy, x, y, alpha, gamma));
  }
  g.markOutput(g.reluGrad("relu.grad", dy, g.relu("relu", x)));
  return {"unary ops and their gradients", g, randomFeeds(g, 2, -3, 3)};  // log and sqrt of negatives: NaN on both
}

OpCase casts() {
  ir::Graph g;
  const int x = g.addInput("x", {64}, DType::kF32, ir::TensorRole::kInput);
  const int n = g.addInput("n", {64}, DType::kInt64, ir::TensorRole::kInput);
  for (DType to : {DType::kBF16, DType::kF16, DType::kInt8, DType::kUInt8, DType::kInt32, DType::kBool}) {
    const int cast = g.cast(std::string("to_") + dtypeName(to), x, to);
    if (isFloatingDType(to)) g.markOutput(g.scale(std::string("scaled_") + dtypeName(to), cast, 3.0));
    g.markOutput(g.cast(std::string("int_to_") + dtypeName(to), n, to));
  }
  Feeds feeds = randomFeeds(g, 3, -300, 300);
  feeds["x"].floats[0] = 70000;  // f16 overflows to infinity
  feeds["x"].floats[1] = 1e-6;   // an f16 subnormal
  feeds["x"].floats[2] = std::nan("");
  return {"casts to each dtype", g, feeds};
}

OpCase dataMovement() {
  ir::Graph g;
  const int x = g.addInput("x", {3, 4, 5}, DType::kBF16, ir::TensorRole::kInput);
  const int ids = g.addInput("ids", {6}, DType::kInt64, ir::TensorRole::kInput);
  const int table = g.addWeight("table", {10, 4}, DType::kF32);
  g.markOutput(g.transpose("t", x, {2, 0, 1}));
  const int s = g.stridedSlice("s", x, {2, 1, 4}, {-1, 2, -2}, {2, 2, 3});
  const ir::Op slice = *g.producer(s);  // a copy: the builder below appends to the graph's ops
  g.markOutput(g.sliceGrad("s.grad", s, slice, {3, 4, 5}));
  g.markOutput(g.concat("cat", {x, g.scale("x2", x, 2.0)}, 1));
  g.markOutput(g.broadcastTo("wide", g.reduce("sum", x, ir::Reduction::kSum, {1}, true), {3, 4, 5}));
  const int rows = g.gather("rows", table, ids, 0);
  g.markOutput(rows);
  g.markOutput(g.gatherGrad("rows.grad", rows, ids, {10, 4}, 0));
  const int dy = g.addInput("dy", {3, 6, 5}, DType::kBF16, ir::TensorRole::kInput);
  g.markOutput(g.gatherGrad("dy.rows.grad", dy, ids, {3, 10, 5}, 1));  // bf16: float sums, then rounded
  Feeds feeds = randomFeeds(g, 4);
  feeds["ids"].ints = {3, -1, 3, 0, 9, 3};  // repeated indices add up; -1 is the last row
  return {"transpose, slices, concat, broadcast, gathers", g, feeds};
}

OpCase reductions() {
  ir::Graph g;
  const int x = g.addInput("x", {4, 6, 5}, DType::kF32, ir::TensorRole::kInput);
  const int n = g.addInput("n", {4, 6}, DType::kInt64, ir::TensorRole::kInput);
  const std::pair<const char*, ir::Reduction> reductions[] = {{"sum", ir::Reduction::kSum},
                                                              {"mean", ir::Reduction::kMean},
                                                              {"max", ir::Reduction::kMax},
                                                              {"min", ir::Reduction::kMin}};
  for (const auto& [name, r] : reductions) g.markOutput(g.reduce(name, x, r, {0, 2}, false));
  g.markOutput(g.reduce("nmax", n, ir::Reduction::kMax, {1}, true));
  g.markOutput(g.reduceSumTo("to", x, {6, 1}));
  g.markOutput(g.softmax("softmax", x, 1, false));
  g.markOutput(g.softmax("log_softmax", x, 2, true));
  return {"reductions and softmaxes", g, randomFeeds(g, 5, -9, 9)};
}

OpCase losses() {
  ir::Graph g;
  const int logits = g.addInput("logits", {6, 5}, DType::kF32, ir::TensorRole::kInput);
  const int labels = g.addInput("labels", {6}, DType::kInt64, ir::TensorRole::kLabel);
  g.markOutput(g.softmaxCrossEntropy("sce", logits, labels));
  g.markOutput(g.softmaxCrossEntropyGrad("sce.grad", logits, labels));
  const int logp = g.addInput("logp", {3, 5, 2}, DType::kF32, ir::TensorRole::kInput);
  const int targets = g.addInput("targets", {3, 2}, DType::kInt64, ir::TensorRole::kLabel);
  const int weights = g.addInput("weights", {5}, DType::kF32, ir::TensorRole::kInput);
  const std::pair<const char*, ir::Reduction> reductions[] = {
      {"nll_none", ir::Reduction::kNone}, {"nll_sum", ir::Reduction::kSum}, {"nll_mean", ir::Reduction::kMean}};
  for (const auto& [label, r] : reductions) {
    const std::string name = label;
    const int loss = g.nllLoss(name, logp, targets, weights, r, int64_t{4});
    g.markOutput(loss);
    const ir::Op loss_op = *g.producer(loss);  // a copy: the builder appends to the graph's ops
    if (r != ir::Reduction::kNone) g.markOutput(g.nllLossGrad(name + ".grad", loss_op));
  }
  const int t = g.addInput("t", {6, 5}, DType::kF32, ir::TensorRole::kInput);
  g.markOutput(g.mseLoss("mse", logits, t));
  g.markOutput(g.mseLossGrad("mse.grad", logits, t));
  Feeds feeds = randomFeeds(g, 6);
  feeds["labels"].ints = {0, 4, 2, 2, 1, 3};
  feeds["targets"].ints = {1, 4, 0, 3, 4, 2};  // 4 is ignored
  return {"losses and their gradients", g, feeds};
}

OpCase convolutionsAndPools() {
  ir::Graph g;
  const ir::Shape x_shape{2, 4, 9, 8}, w_shape{6, 2, 3, 3};
  const int x = g.addInput("x", x_shape, DType::kF32, ir::TensorRole::kInput);
  const int w = g.addInput("w", w_shape, DType::kF32, ir::TensorRole::kInput);
  ir::ConvGeometry conv;
  conv.strides = {2, 1};
  conv.pads = {1, 2, 1, 2};
  conv.dilations = {1, 2};
  conv.group = 2;
  const int y = g.conv("conv", x, w, conv);
  const int dy = g.addInput("dy", g.tensor(y).shape, DType::kF32, ir::TensorRole::kInput);
  g.markOutput(g.convGradInput("conv.dx", dy, w, x_shape, conv));
  g.markOutput(g.convGradWeight("conv.dw", x, dy, w_shape, conv));
  // TensorFlow's SAME padding at stride 2: one more row and column after than before (cuDNN
  // takes only even pads; the executor pads x itself for the rest).
  ir::ConvGeometry same;
  same.strides = {2, 2};
  same.pads = {0, 1, 1, 2};
  const ir::Shape same_w{3, 4, 3, 3};
  const int w2 = g.addInput("w2", same_w, DType::kF32, ir::TensorRole::kInput);
  const int y2 = g.conv("conv.same", x, w2, same);
  const int dy2 = g.addInput("dy2", g.tensor(y2).shape, DType::kF32, ir::TensorRole::kInput);
  g.markOutput(g.convGradInput("conv.same.dx", dy2, w2, x_shape, same));
  g.markOutput(g.convGradWeight("conv.same.dw", x, dy2, same_w, same));
  for (bool max : {true, false}) {
    ir::PoolGeometry pool;
    pool.max = max;
    pool.kernel = {3, 2};
    pool.strides = {2, 2};
    pool.pads = {1, 0, 1, 1};
    pool.ceil_mode = true;
    pool.count_include_pad = !max;
    const std::string name = max ? "max" : "avg";
    const int p = g.pool(name, x, pool);
    const int dp = g.addInput("d" + name, g.tensor(p).shape, DType::kF32, ir::TensorRole::kInput);
    g.markOutput(g.poolGrad(name + ".grad", dp, x, pool));
    if (max) g.markOutput(g.poolArgmax("argmax", x, pool));
  }
  return {"convolutions and pools with their gradients", g, randomFeeds(g, 7)};
}

// Poolings as models have them, which the GPU device hands to cuDNN (reference/cuda/cudnn_pool.hpp):
// ResNet's 3x3 max at stride 2, averages with and without the padding counted, in f32 and bf16 and
// over three spatial dimensions; and, for the gradient kernel, overlapping dilated windows and one
// spatial dimension. Each with its gradient.
OpCase pools() {
  ir::Graph g;
  struct Pooling {
    const char* name;
    DType dtype;
    ir::Shape x;
    bool max;
    std::vector<int64_t> kernel, strides, pads, dilations;
    bool count_include_pad;
  };
  const ir::Shape image{2, 3, 11, 11}, volume{1, 2, 5, 4, 6};
  const std::vector<Pooling> poolings{
      {"max3s2", DType::kF32, image, true, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false},
      {"avg3s1", DType::kF32, image, false, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, false},
      {"avg2s2.with_pad", DType::kF32, image, false, {2, 2}, {2, 2}, {1, 0, 1, 0}, {1, 1}, true},
      {"bf16.max3s2", DType::kBF16, image, true, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false},
      {"bf16.avg3s1.with_pad", DType::kBF16, image, false, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
      {"3d.avg2s2", DType::kF32, volume, false, {2, 2, 2}, {2, 2, 2}, {1, 0, 1, 1, 0, 1}, {1, 1, 1}, false},
      {"3d.max3s1", DType::kF32, volume, true, {3, 3, 3}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, {1, 1, 1}, false},
      {"max2.dilated", DType::kF32, image, true, {2, 3}, {1, 2}, {0, 2, 1, 2}, {2, 2}, false},
      {"1d.avg4s3", DType::kF32, {2, 3, 13}, false, {4}, {3}, {2, 1}, {1}, false},
  };
  for (const Pooling& p : poolings) {
    const int x = g.addInput(std::string(p.name) + ".x", p.x, p.dtype, ir::TensorRole::kInput);
    ir::PoolGeometry geometry;
    geometry.max = p.max;
    geometry.kernel = p.kernel;
    geometry.strides = p.strides;
    geometry.pads = p.pads;
    geometry.dilations = p.dilations;
    geometry.count_include_pad = p.count_include_pad;
    const int y = g.pool(p.name, x, geometry);
    const int dy = g.addInput(std::string(p.name) + ".dy", g.tensor(y).shape, p.dtype, ir::TensorRole::kInput);
    g.markOutput(y);
    g.markOutput(g.poolGrad(std::string(p.name) + ".grad", dy, x, geometry));
  }
  return {"pools as models have them, with their gradients", g, randomFeeds(g, 9)};
}

OpCase lowPrecisionMatmuls(DType dtype) {
  ir::Graph g;
  const int a = g.addInput("a", {2, 9, 16}, dtype, ir::TensorRole::kInput);
  const int b = g.addWeight("b", {16, 5}, dtype);
  g.markOutput(g.matmul("mm", a, b, false, false));
  g.markOutput(g.matmul("mm.t", a, a, true, false));
  return {std::string(dtypeName(dtype)) + " MatMuls", g, randomFeeds(g, 8)};
}

// int8 x int8 products summed into int32 (--precision int8) over int8's whole range: a MatMul
// repeating one matrix over the batch, a batched one of two transposed operands, a grouped, strided,
// dilated convolution, one with TensorFlow's SAME padding at stride 2 (more after than before), and
// a MatMul whose sum wraps past int32's range (on a GPU: whether cuBLAS's int8 GEMM wraps as the CPU does).
OpCase int8Products() {
  ir::Graph g;
  const auto input = [&g](const std::string& name, const ir::Shape& shape) {
    return g.addInput(name, shape, DType::kInt8, ir::TensorRole::kInput);
  };
  g.markOutput(g.matmul("mm", input("a", {3, 7, 20}), g.addWeight("b", {20, 6}, DType::kInt8), false, false));
  g.markOutput(g.matmul("mm.tt", input("c", {3, 20, 7}), input("d", {3, 5, 20}), true, true));
  const int x = input("x", {2, 4, 9, 8});
  ir::ConvGeometry conv;
  conv.strides = {2, 1};
  conv.pads = {1, 2, 0, 1};
  conv.dilations = {1, 2};
  conv.group = 2;
  g.markOutput(g.conv("conv", x, g.addWeight("w", {6, 2, 3, 3}, DType::kInt8), conv));
  ir::ConvGeometry same;
  same.strides = {2, 2};
  same.pads = {0, 1, 1, 2};
  g.markOutput(g.conv("conv.same", x, g.addWeight("w2", {3, 4, 3, 3}, DType::kInt8), same));
  // Sums past int32's range, which wrap: 140000 products of -128 x -128 are 2293760000, -2001207296 in int32.
  constexpr int64_t kTerms = 140000;
  g.markOutput(
      g.matmul("mm.wraps", input("long", {1, kTerms}), g.addWeight("long.w", {kTerms, 1}, DType::kInt8), false, false));
  Feeds feeds = randomFeeds(g, 11, -128, 128);
  for (const char* name : {"long", "long.w"}) feeds[name].ints.assign(static_cast<size_t>(kTerms), -128);
  return {"int8 MatMuls and convolutions into int32", g, feeds};
}

// The model's step as `tpusim reference` builds it (`mode` training or inference).
OpCase modelStep(const std::string& model, int64_t batch, const std::string& optimizer, const std::string& precision,
                 const std::string& mode = "training") {
  RunRequest request;
  request.model_path = tpusim::testing::sourceDir() + "/traces/" + model;
  request.mode = mode;
  request.batch = batch;
  request.optimizer = optimizer;
  request.precision = precision;
  const ModelGraph built = buildModelGraph(request);
  const NamedValues inputs = generatedInputs(built, 3);
  std::map<std::string, ir::TensorValue> given(inputs.begin(), inputs.end());
  const NamedValues weights = generatedWeights(built, 3);  // a shape-only model's, as tpusim reference makes them
  given.insert(weights.begin(), weights.end());
  const std::string what = mode == "training" ? " training step, " + optimizer : " inference";
  return {model + what + ", " + precision, built.graph, completeFeeds(built, given)};
}

}  // namespace

std::vector<OpCase> cudaOpCases() {
  std::vector<OpCase> cases{elementwiseOps(),
                            unaryOps(),
                            casts(),
                            dataMovement(),
                            reductions(),
                            losses(),
                            convolutionsAndPools(),
                            pools(),
                            lowPrecisionMatmuls(DType::kBF16),
                            lowPrecisionMatmuls(DType::kF16),
                            int8Products()};
  for (const char* optimizer : {"sgd", "momentum", "adam", "adagrad", "lars"}) {
    cases.push_back(modelStep("mlp.onnx", 8, optimizer, "float32"));
  }
  for (const char* precision : {"mixed_bfloat16", "mixed_float16"})
    cases.push_back(modelStep("mlp.onnx", 8, "adam", precision));
  cases.push_back(modelStep("mlp.onnx", 8, "sgd", "int8", "inference"));  // int8 weights, activations quantized
  // Embedding tables looked up by ids the step picks out of one feature tensor (computed indices).
  cases.push_back(modelStep("dlrm.onnx", 2, "adagrad", "float32"));
  return cases;
}

}  // namespace tpusim::reference
