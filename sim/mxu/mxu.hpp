// One matrix unit (MXU): a systolic array of rows x cols PEs in the preset's
// dataflow (array_config.hpp), timed per instruction by the closed form
// (array_timing.hpp) or, with mxu.timing=pe_by_pe, by stepping every PE
// (pe_array.hpp); both give the same cycles.
//
// Stats beyond ExecUnit's (busy, waiting for operands, idle): useful MAC slots
// (an int8 instruction's k is swept mxu.int8_macs_per_pe at a time), int8 MACs,
// folds, and the busy cycles split into streaming, weight-load stall and
// fill/drain; MAC utilization = MACs / (rows x cols x total cycles).
#pragma once

#include "configs/hardware.pb.h"
#include "sim/common/exec_unit.hpp"
#include "sim/mxu/array_timing.hpp"

namespace tpusim {

enum class MxuTimingMode { kClosedForm, kPeByPe };

class Mxu : public ExecUnit {
 public:
  Mxu(sc_core::sc_module_name name, const std::string& stat_prefix, const UnitContext& context, ArrayConfig array,
      MxuTimingMode mode);

 protected:
  void execute(const program::Instruction& instruction) override;

 private:
  ArrayConfig m_array;
  MxuTimingMode m_mode;
  Counter& m_macs;
  Counter& m_int8_macs;
  Counter& m_folds;
  Counter& m_stream;
  Counter& m_load_stall;
  Counter& m_fill_drain;
};

MxuTimingMode timingModeOf(const config::HardwareConfig& hw);
// The shape an MXU instruction asks for (passes 0 in an old Program means 1).
MatmulShape matmulShapeOf(const program::MatMul& matmul);

}  // namespace tpusim
