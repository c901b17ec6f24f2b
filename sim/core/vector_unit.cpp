#include "sim/core/vector_unit.hpp"

#include "sim/common/error.hpp"
#include "traces/program_format.hpp"

namespace tpusim {

uint64_t vectorOpCycles(uint64_t elements, uint64_t ops_per_element, VpuShape shape) {
  const uint64_t width = shape.lanes * shape.sublanes;
  const uint64_t work = elements * ops_per_element;
  return shape.pipeline_latency + (work + width - 1) / width;
}

VectorUnit::VectorUnit(sc_core::sc_module_name name, const std::string& stat_prefix, const UnitContext& context,
                       VpuShape shape)
    : ExecUnit(name, stat_prefix, UnitKind::kVpu, context),
      m_shape(shape),
      m_element_ops(context.stats->counter(stat_prefix + ".element_ops", "op",
                                           "element operations performed (elements x ops per element)")) {}

void VectorUnit::execute(const program::Instruction& instruction) {
  if (!instruction.has_vector()) {
    throw Error(ErrorKind::kInternal, "vector unit received non-vector instruction " + instructionName(instruction));
  }
  const program::VectorOp& op = instruction.vector();
  m_element_ops.add(op.elements() * op.ops_per_element());
  wait(clock().cycles(vectorOpCycles(op.elements(), op.ops_per_element(), m_shape)));
}

}  // namespace tpusim
