// Each op's type by op name, from a chip's lowering records: the compiler leaves
// Instruction.op_type empty (traces/program.proto), so tests look an instruction's type up
// by its op here.
#pragma once

#include <map>
#include <string>

#include "traces/program.pb.h"

namespace tpusim::testing {

class OpTypes {
 public:
  explicit OpTypes(const program::ChipProgram& chip) {
    for (const program::OpLowering& op : chip.ops()) m_types.emplace(op.op(), op.op_type());
  }
  // Empty for an op with no lowering record.
  std::string of(const program::Instruction& ins) const {
    const auto found = m_types.find(ins.op());
    return found == m_types.end() ? std::string() : found->second;
  }

 private:
  std::map<std::string, std::string> m_types;
};

}  // namespace tpusim::testing
