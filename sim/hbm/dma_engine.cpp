#include "sim/hbm/dma_engine.hpp"

#include "sim/common/error.hpp"

namespace tpusim {

DmaEngine::DmaEngine(sc_core::sc_module_name name, const std::string& stat_prefix, const UnitContext& context)
    : ExecUnit(name, stat_prefix, context),
      socket("socket"),
      m_bytes(context.stats->counter(stat_prefix + ".bytes", "B", "bytes transferred")) {}

// The HBM side's byte address: its buffer's place in the memory plan plus the tile's place in
// the buffer. Hand-built Programs without buffers address from 0.
uint64_t DmaEngine::hbmAddress(const program::Instruction& instruction) const {
  const bool load = instruction.dma().src() == program::HBM;
  const program::ChipProgram* program = context().program;
  if (program != nullptr) {
    for (uint32_t id : load ? instruction.reads() : instruction.writes()) {
      const program::Buffer& buffer = program->buffers(static_cast<int>(id));
      if (buffer.space() == program::HBM) return buffer.offset() + instruction.dma().hbm_offset();
    }
  }
  return instruction.dma().hbm_offset();
}

void DmaEngine::execute(const program::Instruction& instruction) {
  if (!instruction.has_dma()) {
    throw Error(ErrorKind::kInternal, "DMA engine received non-DMA instruction " + instruction.name());
  }
  const program::DmaTransfer& dma = instruction.dma();
  tlm::tlm_generic_payload payload;
  // HBM -> VMEM reads HBM; VMEM -> HBM writes it.
  payload.set_command(dma.src() == program::HBM ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
  payload.set_address(hbmAddress(instruction));
  payload.set_data_ptr(nullptr);  // timing-only: the functional mode will carry data
  payload.set_data_length(static_cast<unsigned int>(dma.bytes()));
  payload.set_streaming_width(static_cast<unsigned int>(dma.bytes()));
  payload.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  socket->b_transport(payload, delay);
  m_bytes.add(dma.bytes());
  wait(delay);
}

}  // namespace tpusim
