#include "frontend/train/int8_quantization.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "sim/common/error.hpp"

namespace tpusim {

using ir::Graph;
using ir::Op;
using ir::OpType;
using ir::Shape;
using ir::TensorRole;

namespace {

// Symmetric int8: values in [-127, 127], so a scale maps max |x| to 127 (-128 unused).
constexpr double kInt8Max = 127.0;

// Added to the activation's max |x|, so that an all-zero activation quantizes to zeros
// instead of dividing by zero: 2^-100, far below any activation's range (it leaves a max
// above 2^-76 unchanged) and small enough that 127 / 2^-100 is a finite f32.
constexpr double kRangeFloor = 7.888609052210118e-31;
constexpr const char* kRangeFloorTensor = "int8.range_floor";

// How one weight's output channels lie: channel of element i = (i / stride) % channels.
struct ChannelLayout {
  int64_t channels = 0;
  int64_t stride = 1;
  Shape scale_shape;  // broadcasts against the op's output
  bool operator==(const ChannelLayout& other) const = default;
};

// A 2-D Transpose whose input is a weight the model holds (how PyTorch exports write a
// Linear as Transpose(weight) then MatMul): that weight, else -1.
int transposedWeight(const Graph& graph, int tensor) {
  const Op* producer = graph.producer(tensor);
  if (producer == nullptr || producer->type != OpType::kTranspose) return -1;
  const ir::Tensor& w = graph.tensor(producer->inputs[0]);
  const bool swap = producer->perm.empty() || producer->perm == std::vector<int64_t>{1, 0};
  if (w.shape.size() != 2 || !swap || w.role != TensorRole::kWeight || graph.producer(w.id) != nullptr) return -1;
  return w.id;
}

// The weight op quantizes (its inputs[1], or the weight a transpose of it views), and
// whether the product reads it transposed.
struct WeightOperand {
  int weight = -1;
  bool transposed = false;
  ChannelLayout layout;
};

std::optional<WeightOperand> quantizedOperand(const Graph& graph, const Op& op) {
  if (op.inputs.size() < 2) return std::nullopt;
  const ir::Tensor& x = graph.tensor(op.inputs[0]);
  const int viewed = op.type == OpType::kMatMul ? transposedWeight(graph, op.inputs[1]) : -1;
  const ir::Tensor& w = graph.tensor(viewed >= 0 ? viewed : op.inputs[1]);
  if (x.dtype != DType::kF32 || w.dtype != DType::kF32 || w.role != TensorRole::kWeight) return std::nullopt;
  if (graph.producer(w.id) != nullptr) return std::nullopt;
  if (op.type == OpType::kMatMul && w.shape.size() == 2) {
    // [K, N]: channel = i % N; transposed [N, K]: channel = i / K.
    const bool transposed = op.transpose_b != (viewed >= 0);
    const int64_t n = transposed ? w.shape[0] : w.shape[1];
    return WeightOperand{w.id, transposed, ChannelLayout{n, transposed ? w.shape[1] : 1, {n}}};
  }
  if (op.type == OpType::kConv) {
    // [M, C/g, KH, KW]; the scale [M, 1, 1] broadcasts over [N, M, OH, OW].
    return WeightOperand{w.id, false, ChannelLayout{w.shape[0], w.shape[1] * w.shape[2] * w.shape[3], {w.shape[0], 1, 1}}};
  }
  return std::nullopt;
}

}  // namespace

QuantizedWeight quantizeWeight(const ir::TensorValue& weight, int64_t channels, int64_t channel_stride,
                               const Shape& scale_shape) {
  if (weight.dtype != DType::kF32 || channels < 1 || channel_stride < 1) {
    throw Error(ErrorKind::kInternal, "quantizeWeight takes an f32 weight and a channel layout");
  }
  const auto channelOf = [&](size_t i) {
    return static_cast<size_t>((static_cast<int64_t>(i) / channel_stride) % channels);
  };
  std::vector<double> amax(static_cast<size_t>(channels), 0.0);
  for (size_t i = 0; i < weight.floats.size(); ++i) {
    amax[channelOf(i)] = std::max(amax[channelOf(i)], std::abs(weight.floats[i]));
  }
  QuantizedWeight q{ir::TensorValue::zeros(weight.shape, DType::kInt8),
                    ir::TensorValue::zeros(scale_shape, DType::kF32)};
  for (size_t c = 0; c < amax.size(); ++c) {
    q.scales.floats[c] = amax[c] > 0 ? static_cast<float>(amax[c] / kInt8Max) : 1.0;
  }
  for (size_t i = 0; i < weight.floats.size(); ++i) {
    const double scaled = weight.floats[i] / q.scales.floats[channelOf(i)];
    q.values.ints[i] = static_cast<int64_t>(std::clamp(std::nearbyint(scaled), -kInt8Max, kInt8Max));
  }
  return q;
}

void applyInt8Quantization(ImportedModel& model) {
  const Graph& source = model.graph;
  std::map<int, ChannelLayout> quantized_weights;  // source weight -> its channels
  std::vector<std::optional<WeightOperand>> quantized(source.ops().size());
  for (size_t i = 0; i < source.ops().size(); ++i) {
    const std::optional<WeightOperand> operand = quantizedOperand(source, source.ops()[i]);
    if (!operand) continue;
    const auto known = quantized_weights.find(operand->weight);
    if (known == quantized_weights.end() || known->second == operand->layout) {
      quantized[i] = operand;
      quantized_weights[operand->weight] = operand->layout;
    }
  }
  // A transpose of a weight that only quantized products read is not needed any more.
  std::vector<bool> dropped(source.ops().size(), false);
  std::map<int, std::vector<size_t>> readers;
  for (size_t i = 0; i < source.ops().size(); ++i) {
    for (int input : source.ops()[i].inputs) readers[input].push_back(i);
  }
  for (size_t i = 0; i < source.ops().size(); ++i) {
    const Op& op = source.ops()[i];
    if (op.type != OpType::kTranspose || transposedWeight(source, op.outputs[0]) < 0) continue;
    const std::vector<size_t>& by = readers[op.outputs[0]];
    const bool only_quantized = std::all_of(by.begin(), by.end(), [&](size_t r) { return quantized[r].has_value(); });
    const bool is_output = std::count(source.outputs().begin(), source.outputs().end(), op.outputs[0]) > 0;
    dropped[i] = only_quantized && !is_output;
  }
  std::set<int> read_in_float;  // source tensors some op reads as floats
  for (size_t i = 0; i < source.ops().size(); ++i) {
    const Op& op = source.ops()[i];
    if (dropped[i]) continue;
    if (quantized[i]) {
      read_in_float.insert(op.inputs[0]);
    } else {
      read_in_float.insert(op.inputs.begin(), op.inputs.end());
    }
  }
  Graph graph;
  std::map<int, int> map;                      // source tensor -> its value in `graph`
  std::map<int, std::pair<int, int>> int8_of;  // source weight -> (int8 weight, scale)
  for (const ir::Tensor& tensor : source.tensors()) {
    if (source.producer(tensor.id) != nullptr) continue;
    const auto layout = quantized_weights.find(tensor.id);
    if (layout != quantized_weights.end()) {
      const int values = graph.addWeight(tensor.name + "/int8", tensor.shape, DType::kInt8);
      const int scales = graph.addWeight(tensor.name + "/scale", layout->second.scale_shape, DType::kF32);
      int8_of[tensor.id] = {values, scales};
      const auto value = model.initializers.find(tensor.name);
      if (value != model.initializers.end()) {
        QuantizedWeight q =
            quantizeWeight(value->second, layout->second.channels, layout->second.stride, layout->second.scale_shape);
        model.initializers[tensor.name + "/int8"] = std::move(q.values);
        model.initializers[tensor.name + "/scale"] = std::move(q.scales);
        if (!read_in_float.count(tensor.id)) model.initializers.erase(tensor.name);
      } else if (model.weight_inits.count(tensor.name)) {
        ImportedModel::MadeUpQuantized& made_up = model.made_up_quantized[tensor.name + "/int8"];
        made_up.weight = tensor.name;
        made_up.shape = tensor.shape;
        made_up.scales = tensor.name + "/scale";
        made_up.channels = layout->second.channels;
        made_up.channel_stride = layout->second.stride;
        made_up.scale_shape = layout->second.scale_shape;
      }
      if (!read_in_float.count(tensor.id)) continue;
    }
    if (tensor.role == TensorRole::kConstant) {
      map[tensor.id] = graph.addConstant(tensor.name, tensor.shape, tensor.dtype);
    } else if (tensor.role == TensorRole::kWeight) {
      map[tensor.id] = graph.addWeight(tensor.name, tensor.shape, tensor.dtype);
    } else {
      map[tensor.id] = graph.addInput(tensor.name, tensor.shape, tensor.dtype, tensor.role);
    }
  }
  int range_floor = -1;
  if (!int8_of.empty()) {
    range_floor = graph.addConstant(kRangeFloorTensor, {}, DType::kF32);
    model.initializers[kRangeFloorTensor] = ir::TensorValue{{}, DType::kF32, {kRangeFloor}, {}};
  }
  for (size_t i = 0; i < source.ops().size(); ++i) {
    const Op& op = source.ops()[i];
    if (dropped[i]) continue;
    const ir::Tensor& out = source.tensor(op.outputs[0]);
    std::vector<int> inputs;
    for (int input : op.inputs) inputs.push_back(map.count(input) ? map.at(input) : -1);  // -1: a dropped view
    int id = -1;
    if (quantized[i]) {
      // Dynamic per-tensor quantization of the f32 activation:
      // range = max|x| + 2^-100, s = 127 / range, q = int8(round_half_even(x * s)).
      const int x = inputs[0];
      const std::string q = op.name + "/quantize";
      const int amax =
          graph.reduce(q + ".amax", graph.unary(ir::UnaryKind::kAbs, q + ".abs", x), ir::Reduction::kMax, {}, false);
      const int range = graph.add(q + ".range", amax, range_floor);
      const int s = graph.scale(q + ".scale", graph.unary(ir::UnaryKind::kReciprocal, q + ".inverse", range), kInt8Max);
      const int rounded =
          graph.unary(ir::UnaryKind::kRound, q + ".round", graph.binary(OpType::kMul, q + ".mul", x, s));
      const int qx = graph.cast(q, rounded, DType::kInt8);
      const auto [qw, w_scale] = int8_of.at(quantized[i]->weight);
      const int acc = op.type == OpType::kMatMul
                          ? graph.matmul(op.name, qx, qw, op.transpose_a, quantized[i]->transposed, TensorRole::kActivation)
                          : graph.conv(op.name, qx, qw, op.conv);
      // Dequantize: y = f32(acc) x (w_scale x range / 127).
      const std::string d = op.name + "/dequantize";
      const int factor =
          graph.binary(OpType::kMul, d + ".factor", w_scale, graph.scale(d + ".step", range, 1.0 / kInt8Max));
      id = graph.binary(OpType::kMul, d, graph.cast(d + ".f32", acc, DType::kF32), factor);
    } else {
      id = graph.cloneOp(source, op, inputs, op.name);
    }
    graph.rename(id, out.name);
    map[op.outputs[0]] = id;
  }
  for (int output : source.outputs()) graph.markOutput(map.at(output));
  model.graph = std::move(graph);
}

}  // namespace tpusim
