// The HLO module as written in HLO text, before any meaning is given to it:
// computations of instructions with their shapes, operand names and raw
// attributes. hlo_parser builds it; hlo_import turns it into an ir::Graph.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "frontend/import/hlo_lexer.hpp"

namespace tpusim::hlo {

// Where something was written, for error messages.
struct Location {
  int line = 0;
  int column = 0;
};

// An array shape (f32[8,128]{1,0}) or a tuple of shapes ((f32[2], s32[])).
struct HloShape {
  bool is_tuple = false;
  std::string element_type;             // "f32", "pred", "bf16", ... (arrays)
  std::vector<int64_t> dims;            // arrays; empty for a scalar
  std::vector<int64_t> minor_to_major;  // the layout, if one was written
  bool has_layout = false;
  std::vector<HloShape> elements;  // tuples
  Location where;

  std::string toString() const;
};

// One `key=value` attribute; the value is kept as its tokens.
struct HloAttribute {
  std::string key;
  std::vector<Token> value;
  Location where;
};

struct HloInstruction {
  std::string name;
  bool is_root = false;
  HloShape shape;
  std::string opcode;
  std::vector<std::string> operands;  // names, in order
  std::vector<Location> operand_where;
  std::vector<Token> literal;     // constant(...): the tokens inside the parentheses
  int64_t parameter_number = -1;  // parameter(N)
  std::vector<HloAttribute> attributes;
  Location where;

  const HloAttribute* attribute(const std::string& key) const;
};

struct HloComputation {
  std::string name;
  bool is_entry = false;
  std::vector<HloInstruction> instructions;
  int root = -1;  // index of the ROOT instruction (the last one when none is marked)
  Location where;
};

struct HloModule {
  std::string name;
  std::string file;  // for error messages
  std::vector<HloComputation> computations;
  int entry = -1;  // the ENTRY computation (the last one when none is marked)

  const HloComputation* computation(const std::string& name) const;
};

}  // namespace tpusim::hlo
