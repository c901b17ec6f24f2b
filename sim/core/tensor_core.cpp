#include "sim/core/tensor_core.hpp"

#include "sim/common/error.hpp"
#include "traces/program_format.hpp"

namespace tpusim {

TensorCore::TensorCore(sc_core::sc_module_name name, const std::string& stat_prefix, const config::HardwareConfig& hw,
                       const UnitContext& context, std::vector<const program::Instruction*> instructions)
    : sc_core::sc_module(name),
      m_instructions(std::move(instructions)),
      m_scoreboard(context.scoreboard),
      m_clock(context.clock),
      m_kernel_sync_cycles(context.stats->counter(stat_prefix + ".kernel_sync_cycles", "cycles",
                                                  "cycles the sequencer waited at kernel boundaries for the core's "
                                                  "earlier kernels to retire and for each kernel's launch")),
      m_kernel_launches(context.stats->counter(stat_prefix + ".kernel_launches", "kernel",
                                               "kernels the core started (each paid core.kernel_launch_cycles)")),
      m_launch_cycles(static_cast<uint64_t>(hw.core().kernel_launch_cycles())) {
  context.stats->unit(stat_prefix, UnitKind::kTensorCore);
  const ArrayConfig array = arrayConfigOf(hw);
  const MxuTimingMode mode = timingModeOf(hw);
  for (int64_t i = 0; i < hw.mxu().per_core(); ++i) {
    const std::string unit = "mxu" + std::to_string(i);
    m_mxus.push_back(std::make_unique<Mxu>(unit.c_str(), stat_prefix + "." + unit, context, array, mode));
  }
  const VpuShape vpu_shape{static_cast<uint64_t>(hw.vpu().lanes()), static_cast<uint64_t>(hw.vpu().sublanes()),
                           static_cast<uint64_t>(hw.vpu().pipeline_latency_cycles())};
  m_vpu = std::make_unique<VectorUnit>("vpu", stat_prefix + ".vpu", context, vpu_shape);
  for (int64_t i = 0; i < hw.dma().engines_per_core(); ++i) {
    const std::string unit = "dma" + std::to_string(i);
    m_dma.push_back(std::make_unique<DmaEngine>(unit.c_str(), stat_prefix + "." + unit, context,
                                                static_cast<uint64_t>(hw.dma().max_outstanding())));
  }
  SC_THREAD(sequence);
}

ExecUnit& TensorCore::unitFor(const program::Instruction& instruction) {
  // Indices were checked against the hardware by validateProgram.
  switch (instruction.unit()) {
    case program::MXU: return *m_mxus.at(instruction.unit_index());
    case program::VPU: return *m_vpu;
    case program::DMA: return *m_dma.at(instruction.unit_index());
    default: break;
  }
  throw Error(ErrorKind::kInternal, "instruction " + instructionName(instruction) + " has no unit");
}

void TensorCore::sequence() {
  uint64_t issued = 0;  // MXU, vector and DMA instructions issued (ICI collectives run across kernels)
  uint32_t kernel = 0;
  for (const program::Instruction* instruction : m_instructions) {
    if (instruction->unit() != program::ICI && instruction->kernel() != kernel) {
      // A kernel starts once the core's earlier kernels have retired (Instruction.kernel),
      // and its launch has taken core.kernel_launch_cycles.
      const uint64_t waited_from = m_clock->now();
      while (m_scoreboard->retiredOnCore(instruction->core()) < issued) wait(m_scoreboard->retiredEvent());
      if (m_launch_cycles > 0) wait(m_clock->cycles(m_launch_cycles));
      m_kernel_launches.add(1);
      m_kernel_sync_cycles.add(m_clock->now() - waited_from);
      kernel = instruction->kernel();
    }
    if (instruction->unit() != program::ICI) {
      ++issued;
      unitFor(*instruction).issue(instruction);
    } else if (m_ici) {
      m_ici->write(instruction);
    } else {
      throw Error(ErrorKind::kInternal, "collective " + instructionName(*instruction) + " on a chip with no ICI port");
    }
  }
  for (auto& mxu : m_mxus) mxu->issue(nullptr);
  m_vpu->issue(nullptr);
  for (auto& dma : m_dma) dma->issue(nullptr);
}

}  // namespace tpusim
