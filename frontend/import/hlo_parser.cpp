#include "frontend/import/hlo_parser.hpp"

#include <cctype>
#include <charconv>

#include "sim/common/error.hpp"

namespace tpusim::hlo {

std::string HloShape::toString() const {
  if (is_tuple) {
    std::string text = "(";
    for (size_t i = 0; i < elements.size(); ++i) {
      if (i > 0) text += ", ";
      text += elements[i].toString();
    }
    return text + ")";
  }
  std::string text = element_type + "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) text += ',';
    text += std::to_string(dims[i]);
  }
  return text + "]";
}

const HloAttribute* HloInstruction::attribute(const std::string& key) const {
  for (const HloAttribute& attribute : attributes) {
    if (attribute.key == key) return &attribute;
  }
  return nullptr;
}

const HloComputation* HloModule::computation(const std::string& name) const {
  for (const HloComputation& computation : computations) {
    if (computation.name == name) return &computation;
  }
  return nullptr;
}

namespace {

bool isOpen(const Token& t) {
  return t.kind == TokenKind::kPunct && (t.text == "(" || t.text == "[" || t.text == "{");
}
bool isClose(const Token& t) {
  return t.kind == TokenKind::kPunct && (t.text == ")" || t.text == "]" || t.text == "}");
}

class Parser {
 public:
  Parser(std::vector<Token> tokens, const std::string& file) : m_tokens(std::move(tokens)), m_file(file) {}

  HloModule run() {
    HloModule module;
    module.file = m_file;
    if (!isWord("HloModule")) fail(peek(), "expected 'HloModule' at the start of the module, got " + describe(peek()));
    take();
    module.name = expectWord("the module's name");
    while (isPunct(",")) {  // header attributes: entry_computation_layout={...}, is_scheduled=true, ...
      take();
      parseAttribute();
    }
    while (peek().kind != TokenKind::kEnd) module.computations.push_back(parseComputation());
    if (module.computations.empty()) fail(peek(), "the module has no computations");
    for (size_t i = 0; i < module.computations.size(); ++i) {
      const HloComputation& c = module.computations[i];
      if (!c.is_entry) continue;
      if (module.entry >= 0) fail(c.where, "a second ENTRY computation '" + c.name + "'");
      module.entry = static_cast<int>(i);
    }
    if (module.entry < 0) module.entry = static_cast<int>(module.computations.size()) - 1;
    for (size_t i = 0; i < module.computations.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (module.computations[i].name == module.computations[j].name)
          fail(module.computations[i].where, "computation '" + module.computations[i].name + "' is defined twice");
      }
    }
    return module;
  }

 private:
  const Token& peek(size_t ahead = 0) const {
    const size_t at = std::min(m_pos + ahead, m_tokens.size() - 1);
    return m_tokens[at];
  }
  const Token& take() {
    const Token& token = m_tokens[m_pos];
    if (m_pos + 1 < m_tokens.size()) ++m_pos;
    return token;
  }
  bool isWord(const std::string& text) const { return peek().kind == TokenKind::kWord && peek().text == text; }
  bool isPunct(const std::string& text) const { return peek().kind == TokenKind::kPunct && peek().text == text; }

  static std::string describe(const Token& token) {
    switch (token.kind) {
      case TokenKind::kEnd: return "the end of the file";
      case TokenKind::kString: return "a string";
      default: return "'" + token.text + "'";
    }
  }
  static Location at(const Token& token) { return {token.line, token.column}; }

  [[noreturn]] void fail(const Location& where, const std::string& message) const {
    throw Error(ErrorKind::kInvalidInput,
                m_file + ":" + std::to_string(where.line) + ":" + std::to_string(where.column) + ": " + message);
  }
  [[noreturn]] void fail(const Token& token, const std::string& message) const { fail(at(token), message); }

  void expectPunct(const std::string& text, const std::string& context) {
    if (!isPunct(text)) fail(peek(), "expected '" + text + "' " + context + ", got " + describe(peek()));
    take();
  }
  std::string expectWord(const std::string& what) {
    if (peek().kind != TokenKind::kWord) fail(peek(), "expected " + what + ", got " + describe(peek()));
    return take().text;
  }
  int64_t expectInt(const std::string& what) {
    const Token& token = peek();
    int64_t value = 0;
    const char* begin = token.text.data();
    const char* end = begin + token.text.size();
    const auto [ptr, ec] = std::from_chars(begin, end, value);
    if (token.kind != TokenKind::kWord || ec != std::errc() || ptr != end)
      fail(token, "expected " + what + " (an integer), got " + describe(token));
    take();
    return value;
  }

  // Tokens of a balanced group that starts at the current ( [ or {, brackets included.
  std::vector<Token> takeGroup() {
    std::vector<Token> group;
    const Token open = peek();
    int depth = 0;
    do {
      const Token& token = peek();
      if (token.kind == TokenKind::kEnd)
        fail(open, "'" + open.text + "' is not closed before the end of the file (the module is truncated?)");
      if (isOpen(token)) ++depth;
      if (isClose(token)) --depth;
      group.push_back(take());
    } while (depth > 0);
    return group;
  }

  HloAttribute parseAttribute() {
    HloAttribute attribute;
    attribute.where = at(peek());
    attribute.key = expectWord("an attribute name");
    expectPunct("=", "after attribute '" + attribute.key + "'");
    const int line = peek().line;
    if (peek().kind == TokenKind::kEnd) fail(peek(), "attribute '" + attribute.key + "' has no value");
    // A value runs to the next ',' or closing bracket outside brackets, and ends with its line.
    while (true) {
      const Token& token = peek();
      if (token.kind == TokenKind::kEnd || token.line != line) break;
      if (token.kind == TokenKind::kPunct && (token.text == "," || isClose(token))) break;
      if (isOpen(token)) {
        for (Token& t : takeGroup()) attribute.value.push_back(std::move(t));
      } else {
        attribute.value.push_back(take());
      }
    }
    if (attribute.value.empty()) fail(attribute.where, "attribute '" + attribute.key + "' has no value");
    return attribute;
  }

  HloShape parseShape() {
    HloShape shape;
    shape.where = at(peek());
    if (isPunct("(")) {
      take();
      shape.is_tuple = true;
      while (!isPunct(")")) {
        if (!shape.elements.empty()) expectPunct(",", "between the elements of a tuple shape");
        shape.elements.push_back(parseShape());
      }
      take();
      return shape;
    }
    if (peek().kind != TokenKind::kWord || peek(1).kind != TokenKind::kPunct || peek(1).text != "[") {
      fail(peek(), "expected a shape such as f32[8,128]{1,0}, got " + describe(peek()));
    }
    shape.element_type = take().text;
    take();  // [
    while (!isPunct("]")) {
      if (!shape.dims.empty()) expectPunct(",", "between the dimensions of a shape");
      if (isPunct("<") || isPunct("?") || isWord("?")) {
        throw Error(ErrorKind::kUnsupported, m_file + ":" + std::to_string(peek().line) + ":" +
                                                 std::to_string(peek().column) +
                                                 ": dynamic dimensions are not supported (shapes must be static)");
      }
      const Token& token = peek();
      const int64_t dim = expectInt("a dimension size");
      if (dim < 0) fail(token, "a dimension size must not be negative, got " + token.text);
      shape.dims.push_back(dim);
    }
    take();  // ]
    // A layout holds integers ({1,0}, {}, {:T(8,128)}); a '{' before a name opens a computation's body.
    const Token& after = peek(1);
    const bool layout = isPunct("{") && (after.kind == TokenKind::kPunct ||
                                         (after.kind == TokenKind::kWord && !after.text.empty() &&
                                          std::isdigit(static_cast<unsigned char>(after.text[0])) != 0));
    if (layout) {
      const Token open = peek();
      take();
      shape.has_layout = true;
      while (!isPunct("}") && !isPunct(":")) {
        if (!shape.minor_to_major.empty()) expectPunct(",", "between the dimensions of a layout");
        shape.minor_to_major.push_back(expectInt("a layout dimension"));
      }
      if (isPunct(":")) {  // tiling, memory space and the like: no meaning for a logical IR
        int depth = 1;
        while (depth > 0) {
          if (peek().kind == TokenKind::kEnd) fail(open, "the layout '{' is not closed (the module is truncated?)");
          if (isOpen(peek())) ++depth;
          if (isClose(peek())) --depth;
          if (depth > 0) take();
        }
      }
      take();  // }
      std::vector<bool> seen(shape.dims.size(), false);
      bool ok = shape.minor_to_major.size() == shape.dims.size();
      for (int64_t d : shape.minor_to_major) {
        if (!ok || d < 0 || d >= static_cast<int64_t>(seen.size()) || seen[static_cast<size_t>(d)]) {
          ok = false;
          break;
        }
        seen[static_cast<size_t>(d)] = true;
      }
      if (!ok) fail(open, "layout of " + shape.toString() + " is not a permutation of its dimensions");
    }
    return shape;
  }

  HloComputation parseComputation() {
    HloComputation computation;
    computation.where = at(peek());
    if (isWord("ENTRY")) {
      take();
      computation.is_entry = true;
    }
    computation.name = expectWord("a computation name");
    if (isPunct("(")) takeGroup();  // the signature repeats the parameters' shapes
    if (isPunct("->")) {
      take();
      parseShape();
    }
    if (isPunct(",")) {  // attributes of a computation (execution_thread=...)
      while (isPunct(",")) {
        take();
        parseAttribute();
      }
    }
    const Token open = peek();
    expectPunct("{", "to open computation '" + computation.name + "'");
    while (!isPunct("}")) {
      if (peek().kind == TokenKind::kEnd) {
        fail(peek(), "unexpected end of the file: computation '" + computation.name + "' (opened at " +
                         std::to_string(open.line) + ":" + std::to_string(open.column) +
                         ") is not closed (the module is truncated?)");
      }
      computation.instructions.push_back(parseInstruction());
      HloInstruction& added = computation.instructions.back();
      for (size_t i = 0; i + 1 < computation.instructions.size(); ++i) {
        if (computation.instructions[i].name == added.name)
          fail(added.where, "instruction '" + added.name + "' is defined twice in '" + computation.name + "'");
      }
      if (added.is_root) {
        if (computation.root >= 0) fail(added.where, "a second ROOT in computation '" + computation.name + "'");
        computation.root = static_cast<int>(computation.instructions.size()) - 1;
      }
    }
    take();  // }
    if (computation.instructions.empty()) fail(computation.where, "computation '" + computation.name + "' is empty");
    if (computation.root < 0) computation.root = static_cast<int>(computation.instructions.size()) - 1;
    return computation;
  }

  HloInstruction parseInstruction() {
    HloInstruction ins;
    ins.where = at(peek());
    if (isWord("ROOT")) {
      take();
      ins.is_root = true;
    }
    ins.name = expectWord("an instruction name");
    expectPunct("=", "after instruction name '" + ins.name + "'");
    ins.shape = parseShape();
    ins.opcode = expectWord("the opcode of instruction '" + ins.name + "'");
    if (!isPunct("(")) fail(peek(), "expected '(' after opcode '" + ins.opcode + "', got " + describe(peek()));
    if (ins.opcode == "constant") {
      std::vector<Token> group = takeGroup();
      ins.literal.assign(group.begin() + 1, group.end() - 1);
    } else if (ins.opcode == "parameter") {
      take();
      ins.parameter_number = expectInt("a parameter number");
      expectPunct(")", "after the parameter number");
    } else {
      take();
      while (!isPunct(")")) {
        if (!ins.operands.empty()) expectPunct(",", "between operands of '" + ins.name + "'");
        // Older dumps write each operand's shape before its name.
        const bool typed = isPunct("(") || (peek().kind == TokenKind::kWord && peek(1).kind == TokenKind::kPunct &&
                                            peek(1).text == "[");
        if (typed) parseShape();
        ins.operand_where.push_back(at(peek()));
        ins.operands.push_back(expectWord("an operand name"));
      }
      take();
    }
    while (isPunct(",")) {
      take();
      ins.attributes.push_back(parseAttribute());
    }
    return ins;
  }

  std::vector<Token> m_tokens;
  const std::string& m_file;
  size_t m_pos = 0;
};

}  // namespace

HloModule parseHlo(const std::string& text, const std::string& file) {
  return Parser(lexHlo(text, file), file).run();
}

bool looksLikeMlir(const std::string& text) {
  const size_t start = text.find_first_not_of(" \t\r\n");
  if (start != std::string::npos && text.compare(start, 8, "module @") == 0) return true;
  if (start != std::string::npos && text.compare(start, 6, "module") == 0 &&
      text.find("func.func") != std::string::npos)
    return true;
  return text.find("func.func") != std::string::npos || text.find("stablehlo.") != std::string::npos;
}

}  // namespace tpusim::hlo
