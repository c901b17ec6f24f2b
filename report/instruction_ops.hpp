// Which IR op each instruction of a chip belongs to, as a number, so that per-op sections
// group a timeline's events without looking op names up per event.
#pragma once

#include <string>
#include <vector>

#include "traces/program.pb.h"

namespace tpusim {

struct InstructionOps {
  // Per instruction: the index in ChipProgram.ops of the first lowering record of its op,
  // or a number from ops_size() up for an op with no record (one number per such name).
  std::vector<int> op_of;
  int count = 0;  // numbers in use: ops_size() plus the ops with no record

  // Instruction `index`'s op type: its own op_type, or (left empty, as the compiler leaves
  // it) its op's lowering record's.
  const std::string& opType(const program::ChipProgram& chip, int index) const;
  // Instruction `index`'s phase: its op's lowering record's, or PHASE_UNSPECIFIED for an op
  // with no record (or a Program written before phases were recorded).
  program::Phase phase(const program::ChipProgram& chip, int index) const;
};

InstructionOps instructionOps(const program::ChipProgram& chip);

}  // namespace tpusim
