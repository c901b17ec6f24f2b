// A TPU chip: its TensorCores, its CMEM (when on) and HBM, and the scoreboard they share.
#pragma once

#include <memory>
#include <vector>

#include <systemc>

#include "configs/hardware.pb.h"
#include "sim/common/scoreboard.hpp"
#include "sim/core/tensor_core.hpp"
#include "sim/hbm/cmem.hpp"
#include "sim/hbm/hbm.hpp"
#include "traces/program.pb.h"

namespace tpusim {

class Chip : public sc_core::sc_module {
 public:
  // `program` must be validated and outlive the run. `context` supplies the
  // clock and registries; its scoreboard field is filled in by the chip.
  Chip(sc_core::sc_module_name name, const config::HardwareConfig& hw, const program::ChipProgram& program,
       UnitContext context);

  const Scoreboard& scoreboard() const { return m_scoreboard; }

 private:
  Scoreboard m_scoreboard;
  std::unique_ptr<Hbm> m_hbm;
  std::unique_ptr<Cmem> m_cmem;  // null when cmem.mode is off
  std::vector<std::unique_ptr<TensorCore>> m_cores;
};

}  // namespace tpusim
