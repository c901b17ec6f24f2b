// A TensorCore: its sequencer, MXUs, vector unit and DMA engines.
//
// The sequencer walks the core's instructions in Program order and hands each
// to its unit's queue (blocking when that queue is full). Each unit runs its
// own queue in order and waits on the chip scoreboard for dependencies, so
// units overlap wherever the Program's dependencies allow. Because every
// dependency points to an earlier instruction, the earliest unretired
// instruction is always at the head of its queue with its dependencies met:
// the scheme cannot deadlock.
#pragma once

#include <memory>
#include <vector>

#include <systemc>

#include "configs/hardware.pb.h"
#include "sim/common/exec_unit.hpp"
#include "sim/core/vector_unit.hpp"
#include "sim/hbm/dma_engine.hpp"
#include "sim/mxu/mxu.hpp"
#include "traces/program.pb.h"

namespace tpusim {

class TensorCore : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(TensorCore);
  // `instructions` are this core's, in Program order; they must outlive the run.
  TensorCore(sc_core::sc_module_name name, const std::string& stat_prefix, const config::HardwareConfig& hw,
             const UnitContext& context, std::vector<const program::Instruction*> instructions);

  std::vector<std::unique_ptr<DmaEngine>>& dmaEngines() { return m_dma; }
  // The queue of the chip's interconnect port, where the sequencer sends ICI
  // instructions (sim/chip/ici_unit.hpp; set-up only).
  void connectIci(sc_core::sc_fifo_out_if<const program::Instruction*>& queue) { m_ici = &queue; }

 private:
  void sequence();
  ExecUnit& unitFor(const program::Instruction& instruction);

  std::vector<const program::Instruction*> m_instructions;
  Scoreboard* m_scoreboard;
  const ClockDomain* m_clock;
  Counter& m_kernel_sync_cycles;
  Counter& m_kernel_launches;
  uint64_t m_launch_cycles;  // core.kernel_launch_cycles
  std::vector<std::unique_ptr<Mxu>> m_mxus;
  std::unique_ptr<VectorUnit> m_vpu;
  std::vector<std::unique_ptr<DmaEngine>> m_dma;
  sc_core::sc_fifo_out_if<const program::Instruction*>* m_ici = nullptr;
};

}  // namespace tpusim
