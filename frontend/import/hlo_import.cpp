#include "frontend/import/hlo_import.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "frontend/import/hlo_attributes.hpp"
#include "frontend/import/hlo_importer.hpp"
#include "frontend/import/hlo_parser.hpp"
#include "sim/common/log.hpp"
#include "sim/common/numerics.hpp"

namespace tpusim {

namespace hlo_detail {

namespace {

bool isFloatType(DType dtype) {
  return ir::TensorValue::isFloating(dtype);
}

void collectLeaves(const Value& value, std::vector<int>& leaves) {
  if (!value.is_tuple) {
    leaves.push_back(value.tensor);
    return;
  }
  for (const Value& element : value.elements) collectLeaves(element, leaves);
}

bool defaultLayout(const HloShape& shape) {
  for (size_t i = 0; i < shape.minor_to_major.size(); ++i) {
    if (shape.minor_to_major[i] != static_cast<int64_t>(shape.minor_to_major.size() - 1 - i)) return false;
  }
  return true;
}

}  // namespace

std::string Importer::where(const HloInstruction& ins) const {
  return m_module.file + ":" + std::to_string(ins.where.line) + ":" + std::to_string(ins.where.column) +
         ": instruction '" + ins.name + "'";
}

void Importer::fail(const HloInstruction& ins, ErrorKind kind, const std::string& message) const {
  throw Error(kind, where(ins) + ": " + message);
}

DType Importer::dtypeOf(const HloInstruction& ins, const HloShape& shape) const {
  static const std::map<std::string, DType> kTypes = {
      {"pred", DType::kBool},  {"s8", DType::kInt8},   {"u8", DType::kUInt8},   {"s32", DType::kInt32},
      {"u32", DType::kUInt32}, {"s64", DType::kInt64}, {"u64", DType::kUInt64}, {"f16", DType::kF16},
      {"bf16", DType::kBF16},  {"f32", DType::kF32}};
  static const std::set<std::string> kKnownHlo = {
      "s4",    "u4",       "s16",    "u16",           "f64",        "c64",       "c128",
      "token", "f8e4m3fn", "f8e5m2", "f8e4m3b11fnuz", "f8e4m3fnuz", "f8e5m2fnuz"};
  auto found = kTypes.find(shape.element_type);
  if (found != kTypes.end()) return found->second;
  if (kKnownHlo.count(shape.element_type)) {
    fail(ins, ErrorKind::kUnsupported, "element type '" + shape.element_type + "' is not supported yet");
  }
  fail(ins, ErrorKind::kInvalidInput, "malformed shape: unknown element type '" + shape.element_type + "'");
}

const HloComputation& Importer::called(const HloInstruction& ins, const std::string& key) const {
  const hlo::HloAttribute* attribute = ins.attribute(key);
  if (attribute == nullptr) fail(ins, ErrorKind::kInvalidInput, "'" + ins.opcode + "' needs " + key + "=");
  const std::string name = hlo::readWord(*attribute);
  const HloComputation* computation = m_module.computation(name);
  if (computation == nullptr)
    fail(ins, ErrorKind::kInvalidInput, key + "=" + name + " names no computation of the module");
  return *computation;
}

ImportedModel Importer::run() {
  const HloComputation& entry = m_module.computations[static_cast<size_t>(m_module.entry)];
  const Value root = importComputation(entry, nullptr, "");
  std::vector<int> leaves;
  collectLeaves(root, leaves);
  for (int leaf : leaves) {
    if (std::find(m_graph.outputs().begin(), m_graph.outputs().end(), leaf) == m_graph.outputs().end())
      m_graph.markOutput(leaf);
  }
  // The batch is informational for HLO (shapes are fixed): the leading dimension of parameter 0.
  m_result.batch = 1;
  for (const ir::Tensor& tensor : m_graph.tensors()) {
    if (tensor.role == ir::TensorRole::kInput) {
      m_result.batch = tensor.shape.empty() ? 1 : tensor.shape[0];
      break;
    }
  }
  return std::move(m_result);
}

// Instructions in an order where operands come first: parameters by number
// (the ENTRY's all become inputs, used or not), then what the ROOT needs.
std::vector<const HloInstruction*> Importer::order(const HloComputation& computation) const {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < computation.instructions.size(); ++i) index[computation.instructions[i].name] = i;
  std::vector<const HloInstruction*> sorted;
  std::vector<int> state(computation.instructions.size(), 0);  // 0 new, 1 on the path, 2 done
  std::vector<const HloInstruction*> parameters;
  for (const HloInstruction& ins : computation.instructions) {
    if (ins.opcode == "parameter") parameters.push_back(&ins);
  }
  std::sort(parameters.begin(), parameters.end(),
            [](const HloInstruction* a, const HloInstruction* b) { return a->parameter_number < b->parameter_number; });
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (parameters[i]->parameter_number != static_cast<int64_t>(i)) {
      fail(*parameters[i], ErrorKind::kInvalidInput,
           "parameter numbers of computation '" + computation.name + "' must be 0.." +
               std::to_string(parameters.size() - 1) + " once each");
    }
    sorted.push_back(parameters[i]);
    state[index[parameters[i]->name]] = 2;
  }
  // Depth-first, with an explicit stack of (instruction, next operand): from the ROOT
  // first, then from every other instruction, so that undefined operands and cycles
  // are errors anywhere. Only what the ROOT needs is imported.
  std::vector<const HloInstruction*> post;
  auto visit = [&](size_t start) {
    if (state[start] != 0) return;
    state[start] = 1;
    std::vector<std::pair<size_t, size_t>> stack = {{start, 0}};
    while (!stack.empty()) {
      auto& [at, next] = stack.back();
      const HloInstruction& ins = computation.instructions[at];
      if (next == ins.operands.size()) {
        state[at] = 2;
        post.push_back(&ins);
        stack.pop_back();
        continue;
      }
      const size_t operand_at = next++;
      const std::string& operand = ins.operands[operand_at];
      auto found = index.find(operand);
      if (found == index.end()) {
        const hlo::Location& loc = ins.operand_where[operand_at];
        throw Error(ErrorKind::kInvalidInput, m_module.file + ":" + std::to_string(loc.line) + ":" +
                                                  std::to_string(loc.column) + ": instruction '" + ins.name +
                                                  "': operand '" + operand + "' is not defined in computation '" +
                                                  computation.name + "'");
      }
      if (state[found->second] == 1) {
        std::string path = operand;
        for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
          path = computation.instructions[it->first].name + " -> " + path;
          if (computation.instructions[it->first].name == operand) break;
        }
        fail(ins, ErrorKind::kInvalidInput, "instructions form a cycle: " + path);
      }
      if (state[found->second] == 0) {
        state[found->second] = 1;
        stack.push_back({found->second, 0});
      }
    }
  };
  visit(static_cast<size_t>(computation.root));
  const size_t needed = post.size();
  for (size_t i = 0; i < computation.instructions.size(); ++i) visit(i);
  sorted.insert(sorted.end(), post.begin(), post.begin() + static_cast<std::ptrdiff_t>(needed));
  for (size_t i = needed; i < post.size(); ++i) {
    if (!isKnownHloOpcode(post[i]->opcode))
      fail(*post[i], ErrorKind::kInvalidInput, "unknown opcode '" + post[i]->opcode + "'");
    spdlog::debug("{}: not needed by the ROOT, not imported", where(*post[i]));
  }
  return sorted;
}

Value Importer::importComputation(const HloComputation& computation, const std::vector<Value>* args,
                                  const std::string& prefix) {
  if (!m_active.insert(computation.name).second) {
    throw Error(ErrorKind::kInvalidInput, m_module.file + ":" + std::to_string(computation.where.line) + ":" +
                                              std::to_string(computation.where.column) + ": computation '" +
                                              computation.name + "' calls itself");
  }
  std::map<std::string, Value> values;
  std::map<std::string, const HloShape*> shapes;  // as declared, for bitcast's layouts
  for (const HloInstruction* ins : order(computation)) {
    std::vector<Value> operands;
    m_operand_shapes.clear();
    for (const std::string& operand : ins->operands) {
      operands.push_back(values.at(operand));
      m_operand_shapes.push_back(shapes.at(operand));
    }
    const size_t tensors_before = m_graph.tensors().size();
    Value value;
    try {
      value = importInstruction(*ins, operands, args, prefix);
      checkShape(*ins, value, ins->shape);
    } catch (const Error& error) {
      const std::string message = error.what();
      if (message.rfind(m_module.file + ":", 0) == 0) throw;
      throw Error(error.kind(), where(*ins) + ": " + message);
    }
    // The instruction's own result carries its name (identities keep their operand's).
    if (!value.is_tuple && value.tensor >= static_cast<int>(tensors_before) && ins->opcode != "parameter") {
      m_graph.rename(value.tensor, prefix + ins->name);
      auto constant = m_constants.find(value.tensor);
      if (constant != m_constants.end()) {
        m_result.initializers.erase(m_graph.tensor(value.tensor).name);
        m_result.initializers[prefix + ins->name] = constant->second;
      }
    }
    if (ins->shape.has_layout && !defaultLayout(ins->shape)) {
      spdlog::debug("{}: layout of {} is not the default; the IR is logical, so it changes nothing", where(*ins),
                    ins->shape.toString());
    }
    values[ins->name] = std::move(value);
    shapes[ins->name] = &ins->shape;
  }
  m_active.erase(computation.name);
  return values.at(computation.instructions[static_cast<size_t>(computation.root)].name);
}

void Importer::checkShape(const HloInstruction& ins, const Value& value, const HloShape& shape) const {
  if (shape.is_tuple != value.is_tuple || (shape.is_tuple && shape.elements.size() != value.elements.size())) {
    fail(ins, ErrorKind::kInvalidInput, "declared shape " + shape.toString() + " does not match its operands");
  }
  if (shape.is_tuple) {
    for (size_t i = 0; i < shape.elements.size(); ++i) checkShape(ins, value.elements[i], shape.elements[i]);
    return;
  }
  const ir::Tensor& tensor = m_graph.tensor(value.tensor);
  const DType dtype = dtypeOf(ins, shape);
  if (tensor.shape != ir::Shape(shape.dims.begin(), shape.dims.end()) || tensor.dtype != dtype) {
    fail(ins, ErrorKind::kInvalidInput,
         "declared shape " + shape.toString() + " does not match the operands, which give " +
             std::string(dtypeName(tensor.dtype)) + ir::shapeToString(tensor.shape));
  }
}

Value Importer::addParameter(const std::string& name, const HloShape& shape, const HloInstruction& ins) {
  Value value;
  if (shape.is_tuple) {
    value.is_tuple = true;
    for (size_t i = 0; i < shape.elements.size(); ++i)
      value.elements.push_back(addParameter(name + "." + std::to_string(i), shape.elements[i], ins));
    return value;
  }
  value.tensor = m_graph.addInput(name, ir::Shape(shape.dims.begin(), shape.dims.end()), dtypeOf(ins, shape),
                                  ir::TensorRole::kInput);
  return value;
}

Value Importer::importInstruction(const HloInstruction& ins, const std::vector<Value>& operands,
                                  const std::vector<Value>* args, const std::string& prefix) {
  const std::string name = prefix + ins.name;
  const std::string& op = ins.opcode;
  if (op == "parameter") {
    if (args == nullptr) return addParameter(name, ins.shape, ins);
    if (ins.parameter_number >= static_cast<int64_t>(args->size()))
      fail(ins, ErrorKind::kInvalidInput, "the caller passes " + std::to_string(args->size()) + " operands");
    return (*args)[static_cast<size_t>(ins.parameter_number)];
  }
  if (op == "constant") return importConstant(ins, name);
  if (op == "tuple") {
    Value value;
    value.is_tuple = true;
    value.elements = operands;
    return value;
  }
  auto count = [&](size_t expected) {
    if (operands.size() != expected) {
      fail(ins, ErrorKind::kInvalidInput,
           "'" + op + "' takes " + std::to_string(expected) + " operands, got " + std::to_string(operands.size()));
    }
  };
  if (op == "get-tuple-element") {
    count(1);
    const hlo::HloAttribute* index = ins.attribute("index");
    if (index == nullptr) fail(ins, ErrorKind::kInvalidInput, "get-tuple-element needs index=");
    const int64_t i = hlo::readInt(*index);
    if (!operands[0].is_tuple || i < 0 || i >= static_cast<int64_t>(operands[0].elements.size()))
      fail(ins, ErrorKind::kInvalidInput, "index=" + std::to_string(i) + " is not an element of its operand");
    return operands[0].elements[static_cast<size_t>(i)];
  }
  if (op == "copy" || op == "optimization-barrier") {  // no change of value
    count(1);
    return operands[0];
  }
  if (op == "fusion" || op == "call") {
    const HloComputation& body = called(ins, op == "fusion" ? "calls" : "to_apply");
    size_t parameters = 0;
    for (const HloInstruction& i : body.instructions) parameters += i.opcode == "parameter" ? 1 : 0;
    if (parameters != operands.size()) {
      fail(ins, ErrorKind::kInvalidInput,
           "passes " + std::to_string(operands.size()) + " operands to '" + body.name + "', which has " +
               std::to_string(parameters) + " parameters");
    }
    return importComputation(body, &operands, name + "/");
  }
  if (op == "bitcast") {
    // Between default layouts a bitcast is a reshape; otherwise it reorders elements.
    count(1);
    const HloShape& from = *m_operand_shapes[0];
    if (from.is_tuple || ins.shape.is_tuple || !defaultLayout(from) || !defaultLayout(ins.shape) ||
        from.element_type != ins.shape.element_type) {
      fail(ins, ErrorKind::kUnsupported,
           "a bitcast that changes the layout or the element type is not supported yet (only a reshape between "
           "default layouts)");
    }
    return {
        m_graph.reshape(name, operands[0].tensor, ir::Shape(ins.shape.dims.begin(), ins.shape.dims.end())), {}, false};
  }
  if (op == "iota") return {importIota(ins, name), {}, false};
  std::vector<int> tensors;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (operands[i].is_tuple) fail(ins, ErrorKind::kInvalidInput, "operand " + std::to_string(i) + " is a tuple");
    tensors.push_back(operands[i].tensor);
  }
  if (op == "convert") {
    count(1);
    return {importConvert(ins, tensors[0], name), {}, false};
  }
  return importOp(ins, tensors, name);
}

namespace {

// Reads the numbers of a literal ({ {1,2},{3,4} }, 1.5, -inf, true); nested braces are flattened.
bool readLiteral(const std::vector<hlo::Token>& tokens, std::vector<std::string>& words, bool& elided) {
  elided = false;
  for (const hlo::Token& token : tokens) {
    if (token.kind == hlo::TokenKind::kWord) {
      if (token.text == "...") {
        elided = true;
      } else {
        words.push_back(token.text);
      }
    } else if (token.kind != hlo::TokenKind::kPunct || (token.text != "{" && token.text != "}" && token.text != ",")) {
      return false;
    }
  }
  return true;
}

}  // namespace

Value Importer::importConstant(const HloInstruction& ins, const std::string& name) {
  if (ins.shape.is_tuple) fail(ins, ErrorKind::kUnsupported, "tuple constants are not supported yet");
  const DType dtype = dtypeOf(ins, ins.shape);
  const ir::Shape shape(ins.shape.dims.begin(), ins.shape.dims.end());
  std::vector<std::string> words;
  bool elided = false;
  if (!readLiteral(ins.literal, words, elided)) fail(ins, ErrorKind::kInvalidInput, "malformed constant literal");
  const int tensor = m_graph.addConstant(name, shape, dtype);
  if (elided) {  // constant({...}): a dump that left the values out; timing needs none
    m_result.shape_only_weights = true;
    m_result.weight_inits[name] = weightInitFor("", -1, shape, false);
    return {tensor, {}, false};
  }
  const auto count = static_cast<size_t>(ir::elementCount(shape));
  if (words.size() != count) {
    fail(ins, ErrorKind::kInvalidInput,
         "the constant has " + std::to_string(words.size()) + " values for " + ins.shape.toString() + " (" +
             std::to_string(count) + ")");
  }
  ir::TensorValue value = ir::TensorValue::zeros(shape, dtype);
  for (size_t i = 0; i < count; ++i) {
    const std::string& word = words[i];
    if (isFloatType(dtype)) {
      char* end = nullptr;
      const float parsed = std::strtof(word.c_str(), &end);
      if (end != word.c_str() + word.size() || word.empty())
        fail(ins, ErrorKind::kInvalidInput, "constant value '" + word + "' is not a number");
      value.floats[i] = numerics::roundTo(dtype, parsed);
    } else if (dtype == DType::kBool) {
      if (word != "true" && word != "false" && word != "0" && word != "1")
        fail(ins, ErrorKind::kInvalidInput, "pred constant value '" + word + "' is not true or false");
      value.ints[i] = word == "true" || word == "1" ? 1 : 0;
    } else {
      int64_t parsed = 0;
      const auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), parsed);
      if (ec != std::errc() || ptr != word.data() + word.size())
        fail(ins, ErrorKind::kInvalidInput, "constant value '" + word + "' is not an integer");
      value.ints[i] = parsed;
    }
  }
  m_constants[tensor] = value;
  m_result.initializers[name] = std::move(value);
  return {tensor, {}, false};
}

// iota: a constant counting along iota_dimension.
int Importer::importIota(const HloInstruction& ins, const std::string& name) {
  if (!ins.operands.empty()) fail(ins, ErrorKind::kInvalidInput, "iota takes no operands");
  if (ins.shape.is_tuple) fail(ins, ErrorKind::kInvalidInput, "iota's shape must be an array");
  const DType dtype = dtypeOf(ins, ins.shape);
  const ir::Shape shape(ins.shape.dims.begin(), ins.shape.dims.end());
  const hlo::HloAttribute* attribute = ins.attribute("iota_dimension");
  if (attribute == nullptr) fail(ins, ErrorKind::kInvalidInput, "iota needs iota_dimension=");
  const int64_t dim = hlo::readInt(*attribute);
  if (dim < 0 || dim >= static_cast<int64_t>(shape.size()))
    fail(ins, ErrorKind::kInvalidInput, "iota_dimension=" + std::to_string(dim) + " is out of range");
  ir::TensorValue value = ir::TensorValue::zeros(shape, dtype);
  const int64_t inner = ir::elementCount(ir::Shape(shape.begin() + dim + 1, shape.end()));
  const int64_t length = shape[static_cast<size_t>(dim)];
  for (size_t i = 0; i < value.size(); ++i) {
    const int64_t index = (static_cast<int64_t>(i) / inner) % length;
    if (isFloatType(dtype)) {
      value.floats[i] = numerics::roundTo(dtype, static_cast<float>(index));
    } else {
      value.ints[i] = dtype == DType::kBool ? (index != 0 ? 1 : 0) : index;
    }
  }
  const int tensor = m_graph.addConstant(name, shape, dtype);
  m_constants[tensor] = value;
  m_result.initializers[name] = std::move(value);
  return tensor;
}

// convert: nothing between equal types, a new constant when applied to a constant
// (finite values, or a float result), else the IR's Cast.
int Importer::importConvert(const HloInstruction& ins, int x, const std::string& name) {
  const DType to = dtypeOf(ins, ins.shape);
  const ir::Tensor& source = m_graph.tensor(x);
  if (source.dtype == to) return x;
  auto constant = m_constants.find(x);
  bool foldable = constant != m_constants.end();
  if (foldable && !isFloatType(to) && to != DType::kBool && isFloatType(constant->second.dtype)) {
    for (float v : constant->second.floats) foldable = foldable && std::isfinite(v);
  }
  if (!foldable) return m_graph.cast(name, x, to);
  const ir::TensorValue& from = constant->second;
  ir::TensorValue value = ir::TensorValue::zeros(from.shape, to);
  for (size_t i = 0; i < from.size(); ++i) {
    const double v = isFloatType(from.dtype) ? from.floats[i] : static_cast<double>(from.ints[i]);
    if (isFloatType(to)) {
      value.floats[i] = numerics::roundTo(to, static_cast<float>(v));
    } else if (to == DType::kBool) {
      value.ints[i] = v != 0 ? 1 : 0;
    } else {
      value.ints[i] = static_cast<int64_t>(std::trunc(v));  // toward zero, as XLA's float-to-int convert
    }
  }
  const int tensor = m_graph.addConstant(name, from.shape, to);
  m_constants[tensor] = value;
  m_result.initializers[name] = std::move(value);
  return tensor;
}

}  // namespace hlo_detail

const char* supportedHloOps() {
  return "parameter, constant, iota, tuple, get-tuple-element, copy, optimization-barrier, bitcast (a reshape), "
         "fusion and call (inlined), "
         "convert, add, subtract, multiply, divide, maximum, minimum, power, "
         "negate, abs, exponential, log, tanh, sqrt, rsqrt, logistic, erf, compare, select, clamp, broadcast, "
         "reshape, transpose, slice, reverse, pad, concatenate, reduce (add, maximum, minimum), dot, convolution "
         "(2-D), "
         "all-reduce (one replica)";
}

ImportedModel importHloText(const std::string& text, const std::string& file) {
  if (hlo::looksLikeMlir(text) && text.find("HloModule") == std::string::npos) {
    throw Error(ErrorKind::kUnsupported, file +
                                             ": this is StableHLO/MLIR text; tpusim reads HLO text: pass "
                                             "dialect=\"hlo\" to as_text() (or use XLA_FLAGS=--xla_dump_to)");
  }
  const hlo::HloModule module = hlo::parseHlo(text, file);
  return hlo_detail::Importer(module).run();
}

ImportedModel importHloFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error(ErrorKind::kInvalidInput, "cannot open '" + path + "'");
  std::ostringstream text;
  text << file.rdbuf();
  return importHloText(text.str(), path);
}

namespace {

bool endsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

bool isHloPath(const std::string& path) {
  if (endsWith(path, ".hlo") || endsWith(path, ".hlo.txt") || endsWith(path, ".mlir")) return true;
  if (endsWith(path, ".onnx")) return false;
  std::ifstream file(path, std::ios::binary);
  std::string head(4096, '\0');
  file.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(file.gcount()));
  const size_t start = head.find_first_not_of(" \t\r\n");
  if (start != std::string::npos && head.compare(start, 9, "HloModule") == 0) return true;
  return hlo::looksLikeMlir(head);  // importHloFile rejects it, asking for dialect="hlo"
}

}  // namespace tpusim
