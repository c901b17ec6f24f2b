// The vector unit (VPU) of a TensorCore: lanes x sublanes 32-bit ALUs.
// An op on E elements with P ALU operations each takes
//   pipeline_latency + ceil(E * P / (lanes * sublanes)) cycles.
// Transcendentals, cross-lane reductions and sub-32-bit packing are not
// modelled separately yet: each counts as ALU operations (docs/architecture.md).
#pragma once

#include "sim/common/exec_unit.hpp"

namespace tpusim {

struct VpuShape {
  uint64_t lanes;
  uint64_t sublanes;
  uint64_t pipeline_latency;
};

uint64_t vectorOpCycles(uint64_t elements, uint64_t ops_per_element, VpuShape shape);

class VectorUnit : public ExecUnit {
 public:
  VectorUnit(sc_core::sc_module_name name, const std::string& stat_prefix, const UnitContext& context, VpuShape shape);

 protected:
  void execute(const program::Instruction& instruction) override;

 private:
  VpuShape m_shape;
  Counter& m_element_ops;
};

}  // namespace tpusim
