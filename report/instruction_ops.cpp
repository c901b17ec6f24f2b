#include "report/instruction_ops.hpp"

#include <string_view>
#include <unordered_map>

namespace tpusim {

InstructionOps instructionOps(const program::ChipProgram& chip) {
  InstructionOps out;
  std::unordered_map<std::string_view, int> numbers;
  for (int i = 0; i < chip.ops_size(); ++i) numbers.try_emplace(chip.ops(i).op(), i);
  out.count = chip.ops_size();
  out.op_of.resize(static_cast<size_t>(chip.instructions_size()));
  // An op's instructions are mostly consecutive: compare with the previous one's before hashing.
  const std::string* previous = nullptr;
  int previous_number = -1;
  for (int i = 0; i < chip.instructions_size(); ++i) {
    const std::string& op = chip.instructions(i).op();
    if (previous == nullptr || op != *previous) {
      previous_number = numbers.try_emplace(op, out.count).first->second;
      if (previous_number == out.count) ++out.count;
      previous = &op;
    }
    out.op_of[static_cast<size_t>(i)] = previous_number;
  }
  return out;
}

const std::string& InstructionOps::opType(const program::ChipProgram& chip, int index) const {
  const program::Instruction& ins = chip.instructions(index);
  const int op = op_of[static_cast<size_t>(index)];
  return ins.op_type().empty() && op < chip.ops_size() ? chip.ops(op).op_type() : ins.op_type();
}

program::Phase InstructionOps::phase(const program::ChipProgram& chip, int index) const {
  const int op = op_of[static_cast<size_t>(index)];
  return op < chip.ops_size() ? chip.ops(op).phase() : program::PHASE_UNSPECIFIED;
}

}  // namespace tpusim
