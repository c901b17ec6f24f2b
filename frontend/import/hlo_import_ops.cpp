// HLO opcodes to IR ops: elementwise math, data movement, reductions and
// all-reduce (dot and convolution are in hlo_import_dot_conv.cpp, pad in
// hlo_import_pad.cpp). Each checks what the IR builders do not (HLO's
// elementwise ops need equal shapes, say); the caller then checks the result
// against the instruction's declared shape.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "frontend/import/hlo_attributes.hpp"
#include "frontend/import/hlo_importer.hpp"

namespace tpusim::hlo_detail {

namespace {

using ir::OpType;
using ir::Shape;
using ir::UnaryKind;

const std::map<std::string, OpType> kBinary = {
    {"add", OpType::kAdd},    {"subtract", OpType::kSub},    {"multiply", OpType::kMul},
    {"divide", OpType::kDiv}, {"maximum", OpType::kMaximum}, {"minimum", OpType::kMinimum},
};

const std::map<std::string, UnaryKind> kUnary = {
    {"negate", UnaryKind::kNeg},       {"abs", UnaryKind::kAbs},   {"exponential", UnaryKind::kExp},
    {"log", UnaryKind::kLog},          {"tanh", UnaryKind::kTanh}, {"sqrt", UnaryKind::kSqrt},
    {"logistic", UnaryKind::kSigmoid}, {"erf", UnaryKind::kErf},   {"sine", UnaryKind::kSin},
    {"cosine", UnaryKind::kCos},       {"tan", UnaryKind::kTan},   {"floor", UnaryKind::kFloor},
    {"ceil", UnaryKind::kCeil},        {"sign", UnaryKind::kSign}, {"round-nearest-even", UnaryKind::kRound},
};

// HLO opcodes that tpusim does not import yet (anything else is not HLO at all),
// space-separated.
constexpr const char* kKnownUnsupportedList =
    "add-dependency after-all all-gather all-gather-start all-gather-done all-reduce-start "
    "all-reduce-done all-to-all and async-start async-update async-done atan2 batch-norm-grad "
    "batch-norm-inference batch-norm-training bitcast-convert cbrt cholesky clz "
    "collective-broadcast collective-permute collective-permute-start collective-permute-done complex "
    "conditional copy-start copy-done custom-call domain dynamic-reshape dynamic-slice "
    "dynamic-update-slice exponential-minus-one fft gather get-dimension-size imag infeed "
    "is-finite log-plus-one map not or outfeed partition-id popcnt real recv recv-done reduce-precision "
    "reduce-scatter reduce-window remainder replica-id rng rng-bit-generator rng-get-and-update-state "
    "round-nearest-afz scatter select-and-scatter send send-done set-dimension-size "
    "shift-left shift-right-arithmetic shift-right-logical sort stochastic-convert top-k "
    "triangular-solve tuple-select while xor topk ";

const std::set<std::string>& knownUnsupported() {
  static const std::set<std::string> names = [] {
    std::set<std::string> set;
    std::istringstream words(kKnownUnsupportedList);
    for (std::string word; words >> word;) set.insert(word);
    return set;
  }();
  return names;
}

}  // namespace

bool isKnownHloOpcode(const std::string& opcode) {
  static const std::set<std::string> kStructural = {"parameter",   "constant",
                                                    "reverse",     "pad",
                                                    "bitcast",     "iota",
                                                    "tuple",       "get-tuple-element",
                                                    "copy",        "optimization-barrier",
                                                    "fusion",      "call",
                                                    "convert",     "power",
                                                    "rsqrt",       "compare",
                                                    "select",      "clamp",
                                                    "broadcast",   "reshape",
                                                    "transpose",   "slice",
                                                    "concatenate", "reduce",
                                                    "dot",         "convolution",
                                                    "all-reduce"};
  return kStructural.count(opcode) || kBinary.count(opcode) || kUnary.count(opcode) || knownUnsupported().count(opcode);
}

std::vector<int64_t> Importer::intList(const HloInstruction& ins, const std::string& key, bool required) const {
  const hlo::HloAttribute* attribute = ins.attribute(key);
  if (attribute == nullptr) {
    if (required) fail(ins, ErrorKind::kInvalidInput, "'" + ins.opcode + "' needs " + key + "={...}");
    return {};
  }
  return hlo::readIntList(*attribute);
}

int Importer::permute(int x, const std::vector<int64_t>& perm, const std::string& name) {
  if (isIdentityPermutation(perm)) return x;
  return m_graph.transpose(name, x, perm);
}

int Importer::reshapeTo(int x, const Shape& shape, const std::string& name) {
  if (shapeOf(x) == shape) return x;
  return m_graph.reshape(name, x, shape);
}

Value Importer::importOp(const HloInstruction& ins, const std::vector<int>& x, const std::string& name) {
  const std::string& op = ins.opcode;
  auto count = [&](size_t expected) {
    if (x.size() != expected) {
      fail(ins, ErrorKind::kInvalidInput,
           "'" + op + "' takes " + std::to_string(expected) + " operands, got " + std::to_string(x.size()));
    }
  };
  auto single = [](int tensor) { return Value{tensor, {}, false}; };
  if (kBinary.count(op) || kUnary.count(op) || op == "power" || op == "rsqrt" || op == "compare" || op == "select" ||
      op == "clamp") {
    return single(elementwise(ins, x, name));
  }
  if (op == "broadcast") {
    count(1);
    return single(broadcast(ins, x[0], name));
  }
  if (op == "reshape") {
    count(1);
    return single(m_graph.reshape(name, x[0], Shape(ins.shape.dims.begin(), ins.shape.dims.end())));
  }
  if (op == "transpose") {
    count(1);
    return single(m_graph.transpose(name, x[0], intList(ins, "dimensions")));
  }
  if (op == "slice") {
    count(1);
    return single(slice(ins, x[0], name));
  }
  if (op == "pad") {
    count(2);
    return single(pad(ins, x[0], x[1], name));
  }
  if (op == "reverse") {
    count(1);
    return single(reverse(x[0], intList(ins, "dimensions"), name));
  }
  if (op == "concatenate") {
    if (x.empty()) fail(ins, ErrorKind::kInvalidInput, "concatenate needs operands");
    const std::vector<int64_t> dims = intList(ins, "dimensions");
    if (dims.size() != 1) fail(ins, ErrorKind::kInvalidInput, "concatenate needs one dimension");
    if (dims[0] < 0) fail(ins, ErrorKind::kInvalidInput, "concatenate's dimension must not be negative");
    return single(m_graph.concat(name, x, dims[0]));
  }
  if (op == "reduce") return single(reduce(ins, x, name));
  if (op == "dot" || op == "convolution") {
    count(2);
    const DType result = dtypeOf(ins, ins.shape);
    const DType operand = m_graph.tensor(x[0]).dtype;
    if (!ins.shape.is_tuple && result != operand) {
      fail(ins, ErrorKind::kUnsupported,
           std::string("a ") + op + " with " + dtypeName(operand) + " operands and a " + dtypeName(result) +
               " result (mixed precision, accumulating in the wider type) is not supported yet");
    }
  }
  if (op == "dot") {
    return single(dot(ins, x[0], x[1], name));
  }
  if (op == "convolution") {
    count(2);
    return single(convolution(ins, x[0], x[1], name));
  }
  if (op == "all-reduce") return allReduce(ins, x, name);
  if (knownUnsupported().count(op))
    fail(ins, ErrorKind::kUnsupported,
         "opcode '" + op + "' is not supported yet (supported: " + supportedHloOps() + ")");
  fail(ins, ErrorKind::kInvalidInput, "unknown opcode '" + op + "'");
}

int Importer::elementwise(const HloInstruction& ins, const std::vector<int>& x, const std::string& name) {
  const std::string& op = ins.opcode;
  const size_t arity = kUnary.count(op) || op == "rsqrt" ? 1 : (op == "select" || op == "clamp") ? 3 : 2;
  if (x.size() != arity) {
    fail(ins, ErrorKind::kInvalidInput,
         "'" + op + "' takes " + std::to_string(arity) + " operands, got " + std::to_string(x.size()));
  }
  // HLO does not broadcast implicitly: operands have equal shapes (select's predicate,
  // clamp's bounds may be scalars).
  const Shape& shape = op == "clamp" ? shapeOf(x[1]) : shapeOf(x.back());
  for (size_t i = 0; i < x.size(); ++i) {
    const bool may_be_scalar = (op == "select" && i == 0) || (op == "clamp" && i != 1);
    if (shapeOf(x[i]) == shape || (may_be_scalar && shapeOf(x[i]).empty())) continue;
    std::string shapes;
    for (size_t j = 0; j < x.size(); ++j) {
      const ir::Tensor& t = m_graph.tensor(x[j]);
      if (j > 0) shapes += " and ";
      shapes += dtypeName(t.dtype);
      shapes += ir::shapeToString(t.shape);
    }
    fail(ins, ErrorKind::kInvalidInput,
         "the operands of '" + op + "' have shapes " + shapes + "; HLO needs them equal");
  }
  if (auto binary = kBinary.find(op); binary != kBinary.end()) return m_graph.binary(binary->second, name, x[0], x[1]);
  if (auto unary = kUnary.find(op); unary != kUnary.end()) return m_graph.unary(unary->second, name, x[0]);
  if (op == "rsqrt") {
    return m_graph.unary(UnaryKind::kReciprocal, name, m_graph.unary(UnaryKind::kSqrt, name + ".sqrt", x[0]));
  }
  if (op == "power") {
    if (m_graph.tensor(x[0]).dtype != m_graph.tensor(x[1]).dtype)
      fail(ins, ErrorKind::kInvalidInput, "power's operands have different dtypes");
    return m_graph.pow(name, x[0], x[1]);
  }
  if (op == "select") return m_graph.where(name, x[0], x[1], x[2]);
  if (op == "clamp") {  // clamp(lo, x, hi) = min(max(x, lo), hi)
    return m_graph.binary(OpType::kMinimum, name, m_graph.binary(OpType::kMaximum, name + ".lo", x[1], x[0]), x[2]);
  }
  const hlo::HloAttribute* direction = ins.attribute("direction");
  if (direction == nullptr) fail(ins, ErrorKind::kInvalidInput, "compare needs direction=");
  static const std::map<std::string, ir::CompareDirection> kDirections = {
      {"EQ", ir::CompareDirection::kEq}, {"NE", ir::CompareDirection::kNe}, {"LT", ir::CompareDirection::kLt},
      {"LE", ir::CompareDirection::kLe}, {"GT", ir::CompareDirection::kGt}, {"GE", ir::CompareDirection::kGe}};
  const std::string text = hlo::readWord(*direction);
  auto found = kDirections.find(text);
  if (found == kDirections.end())
    fail(ins, ErrorKind::kInvalidInput, "compare direction '" + text + "' is not EQ, NE, LT, LE, GT or GE");
  return m_graph.compare(found->second, name, x[0], x[1]);
}

// broadcast: operand dimension i becomes output dimension dimensions[i]; the
// others are new. As IR: order the mapped dimensions, put 1s where the new
// ones go, then a numpy broadcast.
int Importer::broadcast(const HloInstruction& ins, int x, const std::string& name) {
  const Shape out(ins.shape.dims.begin(), ins.shape.dims.end());
  std::vector<int64_t> dims = intList(ins, "dimensions");
  const Shape& in = shapeOf(x);
  if (dims.size() != in.size())
    fail(
        ins, ErrorKind::kInvalidInput,
        "dimensions= maps " + std::to_string(dims.size()) + " of " + std::to_string(in.size()) + " operand dimensions");
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= static_cast<int64_t>(out.size()) || out[static_cast<size_t>(dims[i])] != in[i]) {
      fail(ins, ErrorKind::kInvalidInput,
           "operand dimension " + std::to_string(i) + " does not map onto " + ins.shape.toString());
    }
  }
  std::vector<int64_t> perm(dims.size());
  std::iota(perm.begin(), perm.end(), 0);
  std::sort(perm.begin(), perm.end(),
            [&](int64_t a, int64_t b) { return dims[static_cast<size_t>(a)] < dims[static_cast<size_t>(b)]; });
  x = permute(x, perm, name + ".order");
  Shape kept(out.size(), 1);
  for (int64_t d : dims) kept[static_cast<size_t>(d)] = out[static_cast<size_t>(d)];
  x = reshapeTo(x, kept, name + ".rank");
  if (kept == out) return x;
  return m_graph.broadcastTo(name, x, out, ir::TensorRole::kActivation);
}

int Importer::slice(const HloInstruction& ins, int x, const std::string& name) {
  const hlo::HloAttribute* attribute = ins.attribute("slice");
  if (attribute == nullptr) fail(ins, ErrorKind::kInvalidInput, "slice needs slice={[start:limit:stride], ...}");
  const std::vector<hlo::SliceRange> ranges = hlo::readSlices(*attribute);
  const Shape& in = shapeOf(x);
  if (ranges.size() != in.size())
    fail(ins, ErrorKind::kInvalidInput,
         "slice gives " + std::to_string(ranges.size()) + " ranges for rank " + std::to_string(in.size()));
  std::vector<int64_t> starts;
  std::vector<int64_t> steps;
  Shape out;
  for (size_t d = 0; d < ranges.size(); ++d) {
    const hlo::SliceRange& r = ranges[d];
    if (r.stride < 1 || r.start < 0 || r.limit > in[d] || r.start > r.limit) {
      fail(ins, ErrorKind::kInvalidInput,
           "slice range [" + std::to_string(r.start) + ":" + std::to_string(r.limit) + ":" + std::to_string(r.stride) +
               "] does not fit dimension " + std::to_string(d) + " of size " + std::to_string(in[d]));
    }
    starts.push_back(r.start);
    steps.push_back(r.stride);
    out.push_back((r.limit - r.start + r.stride - 1) / r.stride);
  }
  return m_graph.stridedSlice(name, x, starts, steps, out);
}

int Importer::reverse(int x, const std::vector<int64_t>& dims, const std::string& name) {
  const Shape& shape = shapeOf(x);
  std::vector<int64_t> starts(shape.size(), 0);
  std::vector<int64_t> steps(shape.size(), 1);
  for (int64_t d : dims) {
    if (d < 0 || d >= static_cast<int64_t>(shape.size()))
      throw Error(ErrorKind::kInvalidInput, "reverse dimension " + std::to_string(d) + " is out of range");
    starts[static_cast<size_t>(d)] = std::max<int64_t>(0, shape[static_cast<size_t>(d)] - 1);
    steps[static_cast<size_t>(d)] = -1;
  }
  return m_graph.stridedSlice(name, x, starts, steps, shape);
}

ir::Reduction Importer::reductionOf(const HloInstruction& ins, const std::string& key) const {
  const HloComputation& region = called(ins, key);
  const HloInstruction& root = region.instructions[static_cast<size_t>(region.root)];
  std::vector<std::string> parameters;
  for (const HloInstruction& i : region.instructions) {
    if (i.opcode == "parameter") parameters.push_back(i.name);
  }
  std::vector<std::string> operands = root.operands;
  std::sort(parameters.begin(), parameters.end());
  std::sort(operands.begin(), operands.end());
  if (parameters.size() == 2 && operands == parameters) {
    if (root.opcode == "add") return ir::Reduction::kSum;
    if (root.opcode == "maximum") return ir::Reduction::kMax;
    if (root.opcode == "minimum") return ir::Reduction::kMin;
  }
  fail(ins, ErrorKind::kUnsupported,
       key + "=" + region.name + " is not a single add, maximum or minimum of its two parameters");
}

int Importer::reduce(const HloInstruction& ins, const std::vector<int>& x, const std::string& name) {
  if (x.size() != 2) {
    fail(ins, x.size() % 2 == 0 && !x.empty() ? ErrorKind::kUnsupported : ErrorKind::kInvalidInput,
         "reduce of " + std::to_string(x.size() / 2) + " operands (a variadic reduce) is not supported yet");
  }
  const ir::Reduction reduction = reductionOf(ins, "to_apply");
  const int init = x[1];
  if (!shapeOf(init).empty()) fail(ins, ErrorKind::kInvalidInput, "reduce's init value must be a scalar");
  const std::vector<int64_t> dims = intList(ins, "dimensions");
  int result = x[0];
  if (!dims.empty()) {
    result = m_graph.reduce(name + (reduction == ir::Reduction::kSum ? ".sum" : ".fold"), x[0], reduction, dims, false);
  }
  // The init value joins the fold unless it is the reduction's identity.
  auto constant = m_constants.find(init);
  if (constant != m_constants.end() && ir::TensorValue::isFloating(constant->second.dtype) && !dims.empty()) {
    const float v = constant->second.floats[0];
    const bool identity = (reduction == ir::Reduction::kSum && v == 0.0f) ||
                          (reduction == ir::Reduction::kMax && std::isinf(v) && v < 0) ||
                          (reduction == ir::Reduction::kMin && std::isinf(v) && v > 0);
    if (identity) return result;
  }
  const OpType combine = reduction == ir::Reduction::kSum   ? OpType::kAdd
                         : reduction == ir::Reduction::kMax ? OpType::kMaximum
                                                            : OpType::kMinimum;
  return m_graph.binary(combine, name, result, init);
}

Value Importer::allReduce(const HloInstruction& ins, const std::vector<int>& x, const std::string& name) {
  if (x.empty()) fail(ins, ErrorKind::kInvalidInput, "all-reduce needs operands");
  const ir::Reduction reduction = reductionOf(ins, "to_apply");
  int64_t replicas = 1;
  if (const hlo::HloAttribute* groups = ins.attribute("replica_groups")) replicas = hlo::readReplicaGroupSize(*groups);
  if (replicas > 1) {
    fail(ins, ErrorKind::kUnsupported,
         "unsupported: all-reduce across " + std::to_string(replicas) +
             " replicas in an HLO module (an HLO module runs on one chip; --topology replicates ONNX models)");
  }
  if (x.size() == 1) return {m_graph.allReduce(name, x[0], reduction, replicas), {}, false};
  Value value;
  value.is_tuple = true;
  for (size_t i = 0; i < x.size(); ++i) {
    value.elements.push_back({m_graph.allReduce(name + "." + std::to_string(i), x[i], reduction, replicas), {}, false});
  }
  return value;
}

}  // namespace tpusim::hlo_detail
