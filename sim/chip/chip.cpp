#include "sim/chip/chip.hpp"

namespace tpusim {

Chip::Chip(sc_core::sc_module_name name, const config::HardwareConfig& hw, const program::ChipProgram& program,
           UnitContext context, CollectiveNetwork* ici)
    : sc_core::sc_module(name), m_scoreboard(program) {
  const std::string prefix = "chip" + std::to_string(context.chip);
  context.scoreboard = &m_scoreboard;
  const ClockDomain& clock = *context.clock;
  m_hbm = std::make_unique<Hbm>("hbm", prefix + ".hbm", clock, hw, *context.stats, *context.total_cycles);
  // With CMEM on, the DMA engines reach HBM through it.
  const CmemGeometry cmem = cmemGeometryOf(hw);
  if (cmem.mode != CmemMode::kOff) {
    m_cmem =
        std::make_unique<Cmem>("cmem", prefix + ".cmem", clock, cmem, program, *context.stats, *context.total_cycles);
    m_cmem->hbm.bind(m_hbm->socket);
  }

  std::vector<std::vector<const program::Instruction*>> per_core(static_cast<size_t>(hw.chip().tensor_cores()));
  for (const program::Instruction& instruction : program.instructions()) {
    per_core[instruction.core()].push_back(&instruction);
  }
  for (size_t core = 0; core < per_core.size(); ++core) {
    const std::string core_name = "core" + std::to_string(core);
    m_cores.push_back(std::make_unique<TensorCore>(core_name.c_str(), prefix + "." + core_name, hw, context,
                                                   std::move(per_core[core])));
    for (auto& dma : m_cores.back()->dmaEngines()) {
      if (m_cmem) {
        dma->socket.bind(m_cmem->socket);
      } else {
        dma->socket.bind(m_hbm->socket);
      }
    }
  }
  if (ici) {  // after the cores, so that reports list it after their units
    m_ici = std::make_unique<IciUnit>("ici", prefix + ".ici", context, *ici);
    for (auto& core : m_cores) core->connectIci(m_ici->queue());
  }
}

}  // namespace tpusim
