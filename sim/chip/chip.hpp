// A TPU chip: its TensorCores, its CMEM (when on) and HBM, the scoreboard they share
// and, in a multi-chip slice, its interconnect port (ICI unit).
#pragma once

#include <memory>
#include <vector>

#include <systemc>

#include "configs/hardware.pb.h"
#include "sim/chip/ici_unit.hpp"
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
  // `ici`, when given, runs the Program's collectives (a chip of a pod).
  Chip(sc_core::sc_module_name name, const config::HardwareConfig& hw, const program::ChipProgram& program,
       UnitContext context, CollectiveNetwork* ici = nullptr);

  const Scoreboard& scoreboard() const { return m_scoreboard; }

 private:
  Scoreboard m_scoreboard;
  std::unique_ptr<Hbm> m_hbm;
  std::unique_ptr<Cmem> m_cmem;  // null when cmem.mode is off
  std::unique_ptr<IciUnit> m_ici;
  std::vector<std::unique_ptr<TensorCore>> m_cores;
};

}  // namespace tpusim
