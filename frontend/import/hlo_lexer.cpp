#include "frontend/import/hlo_lexer.hpp"

#include <cctype>

#include "sim/common/error.hpp"

namespace tpusim::hlo {

namespace {

bool isWordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '$';
}

class Lexer {
 public:
  Lexer(const std::string& text, const std::string& file) : m_text(text), m_file(file) {}

  std::vector<Token> run() {
    std::vector<Token> tokens;
    while (true) {
      skipSpaceAndComments();
      if (m_pos >= m_text.size()) break;
      tokens.push_back(next());
    }
    tokens.push_back(Token{TokenKind::kEnd, "", m_line, m_column});
    return tokens;
  }

 private:
  [[noreturn]] void fail(int line, int column, const std::string& message) const {
    throw Error(ErrorKind::kInvalidInput,
                m_file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + message);
  }

  char peek(size_t ahead = 0) const { return m_pos + ahead < m_text.size() ? m_text[m_pos + ahead] : '\0'; }

  void advance() {
    if (m_text[m_pos] == '\n') {
      ++m_line;
      m_column = 1;
    } else {
      ++m_column;
    }
    ++m_pos;
  }

  void skipSpaceAndComments() {
    while (m_pos < m_text.size()) {
      const char c = peek();
      if (std::isspace(static_cast<unsigned char>(c)) != 0) {
        advance();
      } else if (c == '/' && peek(1) == '*') {
        const int line = m_line;
        const int column = m_column;
        advance();
        advance();
        while (m_pos < m_text.size() && !(peek() == '*' && peek(1) == '/')) advance();
        if (m_pos >= m_text.size()) fail(line, column, "unterminated /* comment");
        advance();
        advance();
      } else if (c == '/' && peek(1) == '/') {
        while (m_pos < m_text.size() && peek() != '\n') advance();
      } else {
        return;
      }
    }
  }

  Token next() {
    Token token;
    token.line = m_line;
    token.column = m_column;
    const char c = peek();
    if (c == '%') {  // older dumps write %name
      advance();
      if (!isWordChar(peek())) fail(token.line, token.column, "'%' must be followed by a name");
      token.kind = TokenKind::kWord;
      readWord(token.text);
      return token;
    }
    if (c == '"') {
      token.kind = TokenKind::kString;
      advance();
      while (m_pos < m_text.size() && peek() != '"') {
        if (peek() == '\\' && m_pos + 1 < m_text.size()) {
          token.text += peek();
          advance();
        }
        token.text += peek();
        advance();
      }
      if (m_pos >= m_text.size()) fail(token.line, token.column, "unterminated string");
      advance();
      return token;
    }
    if (c == '-' && peek(1) == '>') {
      token.kind = TokenKind::kPunct;
      token.text = "->";
      advance();
      advance();
      return token;
    }
    if (isWordChar(c) || (c == '-' && isWordChar(peek(1)))) {
      token.kind = TokenKind::kWord;
      readWord(token.text);
      return token;
    }
    static const std::string kPunct = "{}[](),=:<>";
    if (kPunct.find(c) != std::string::npos) {
      token.kind = TokenKind::kPunct;
      token.text = std::string(1, c);
      advance();
      return token;
    }
    fail(token.line, token.column, std::string("unexpected character '") + c + "'");
  }

  // A word; '-' joins it unless it starts an arrow (b01f_01io->b01f), and '+' joins
  // a number's exponent (1e+10).
  void readWord(std::string& out) {
    while (m_pos < m_text.size()) {
      const char c = peek();
      const bool exponent_sign = c == '+' && !out.empty() && (out.back() == 'e' || out.back() == 'E') &&
                                 std::isdigit(static_cast<unsigned char>(out.front() == '-' ? out[1] : out[0])) != 0 &&
                                 std::isdigit(static_cast<unsigned char>(peek(1))) != 0;
      if (exponent_sign) {
        out += c;
        advance();
        continue;
      }
      if (isWordChar(c) || (c == '-' && peek(1) != '>')) {
        if (c == '-' && !isWordChar(peek(1))) break;
        out += c;
        advance();
      } else {
        break;
      }
    }
  }

  const std::string& m_text;
  const std::string& m_file;
  size_t m_pos = 0;
  int m_line = 1;
  int m_column = 1;
};

}  // namespace

std::vector<Token> lexHlo(const std::string& text, const std::string& file) {
  return Lexer(text, file).run();
}

}  // namespace tpusim::hlo
