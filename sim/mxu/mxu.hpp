// One matrix unit (MXU): a weight-stationary systolic array timed by the
// closed form of ws_timing.hpp. Stats beyond ExecUnit's: useful MACs, folds,
// and MAC utilization = MACs / (rows x cols x total cycles).
#pragma once

#include "sim/common/exec_unit.hpp"
#include "sim/mxu/ws_timing.hpp"

namespace tpusim {

class Mxu : public ExecUnit {
 public:
  Mxu(sc_core::sc_module_name name, const std::string& stat_prefix, const UnitContext& context, MxuShape shape);

 protected:
  void execute(const program::Instruction& instruction) override;

 private:
  MxuShape m_shape;
  Counter& m_macs;
  Counter& m_folds;
};

}  // namespace tpusim
