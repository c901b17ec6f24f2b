#include "sim/hbm/dma_engine.hpp"

#include "sim/common/error.hpp"
#include "sim/hbm/hbm_access.hpp"

namespace tpusim {

DmaEngine::DmaEngine(sc_core::sc_module_name name, const std::string& stat_prefix, const UnitContext& context)
    : ExecUnit(name, stat_prefix, context),
      socket("socket"),
      m_bytes(context.stats->counter(stat_prefix + ".bytes", "B", "bytes transferred")) {}

void DmaEngine::execute(const program::Instruction& instruction) {
  if (!instruction.has_dma()) {
    throw Error(ErrorKind::kInternal, "DMA engine received non-DMA instruction " + instruction.name());
  }
  const program::DmaTransfer& dma = instruction.dma();
  tlm::tlm_generic_payload payload;
  // HBM -> VMEM reads HBM; VMEM -> HBM writes it.
  payload.set_command(dma.src() == program::HBM ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
  payload.set_address(dma.hbm_address());
  payload.set_data_ptr(nullptr);  // timing-only: the functional mode will carry data
  payload.set_data_length(static_cast<unsigned int>(dma.bytes()));
  payload.set_streaming_width(static_cast<unsigned int>(dma.bytes()));
  payload.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  DmaStride stride;
  stride.rows = dma.rows();
  stride.row_bytes = dma.row_bytes();
  stride.row_stride = dma.row_stride();
  if (dma.rows() > 1) payload.set_extension(&stride);
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  socket->b_transport(payload, delay);
  payload.clear_extension(&stride);  // the extension lives on this stack, not in the payload
  m_bytes.add(dma.bytes());
  wait(delay);
}

}  // namespace tpusim
