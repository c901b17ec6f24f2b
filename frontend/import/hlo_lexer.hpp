// Tokens of XLA's HLO text format (what --xla_dump_to and
// jax.jit(f).lower(...).as_text(dialect="hlo") write), each with its line and
// column. Comments (/* ... */ and // ...) are skipped; a '%' before a name is
// dropped. Words are runs of letters, digits and _ . $ -, so opcodes
// (get-tuple-element), names (Arg_0.1), numbers (-1.5e-3, -inf) and window
// fields (3x3, 1_1x1_1) are each one word; the parser decides what a word means.
#pragma once

#include <string>
#include <vector>

namespace tpusim::hlo {

enum class TokenKind {
  kWord,    // a name, opcode, keyword or number
  kString,  // "..." with its quotes removed (escapes kept as written)
  kPunct,   // one of { } [ ] ( ) , = : < > or the arrow ->
  kEnd,     // the end of the text
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;
  int line = 1;
  int column = 1;
};

// Splits `text` into tokens; the last one is kEnd. An unterminated string or
// comment, or a character that has no place in HLO, is an Error naming
// `file`, the line and the column.
std::vector<Token> lexHlo(const std::string& text, const std::string& file);

}  // namespace tpusim::hlo
