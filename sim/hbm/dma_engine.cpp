#include "sim/hbm/dma_engine.hpp"

#include <algorithm>

#include "sim/common/error.hpp"
#include "sim/hbm/hbm_access.hpp"
#include "traces/program_format.hpp"

namespace tpusim {

// One transfer in flight: a thread that runs what the engine hands it, then
// retires it once every transfer issued before it has retired.
class DmaEngine::Slot : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Slot);
  Slot(sc_core::sc_module_name name, DmaEngine& engine) : sc_core::sc_module(name), m_engine(engine) { SC_THREAD(run); }

  bool free() const { return m_instruction == nullptr; }
  void start(const program::Instruction& instruction, const TimelineEvent& event, uint64_t sequence) {
    m_instruction = &instruction;
    m_event = event;
    m_sequence = sequence;
    m_go.notify();
  }

 private:
  void run() {
    while (true) {
      while (m_instruction == nullptr) wait(m_go);
      m_engine.execute(*m_instruction);
      while (m_engine.m_retired != m_sequence) wait(m_engine.m_retired_event);
      const program::Instruction& done = *m_instruction;
      m_instruction = nullptr;
      m_engine.retire(done, m_event);
      m_engine.endWork();
      ++m_engine.m_retired;
      --m_engine.m_in_flight;
      m_engine.m_retired_event.notify();
      m_engine.m_slot_freed.notify();
    }
  }

  DmaEngine& m_engine;
  const program::Instruction* m_instruction = nullptr;
  TimelineEvent m_event;
  uint64_t m_sequence = 0;
  sc_core::sc_event m_go;
};

DmaEngine::DmaEngine(sc_core::sc_module_name name, const std::string& stat_prefix, const UnitContext& context,
                     uint64_t max_outstanding)
    : ExecUnit(name, stat_prefix, UnitKind::kDma, context),
      socket("socket"),
      m_bytes(context.stats->counter(stat_prefix + ".bytes", "B", "bytes transferred")),
      m_peak_in_flight(
          context.stats->counter(stat_prefix + ".peak_in_flight", "transfers", "most transfers in flight at once")) {
  for (uint64_t i = 0; i < max_outstanding; ++i) {
    const std::string slot = "slot" + std::to_string(i);
    m_slots.push_back(std::make_unique<Slot>(slot.c_str(), *this));
  }
}

DmaEngine::~DmaEngine() = default;

void DmaEngine::dispatch(const program::Instruction& instruction, const TimelineEvent& event) {
  while (m_in_flight == m_slots.size()) wait(m_slot_freed);
  auto slot = std::find_if(m_slots.begin(), m_slots.end(), [](const auto& s) { return s->free(); });
  TimelineEvent issued = event;
  issued.start_cycle = clock().now();  // after any wait for a free slot
  ++m_in_flight;
  if (m_in_flight > m_peak_in_flight.value()) m_peak_in_flight.add(m_in_flight - m_peak_in_flight.value());
  beginWork();
  (*slot)->start(instruction, issued, m_issued++);
}

void DmaEngine::execute(const program::Instruction& instruction) {
  if (!instruction.has_dma()) {
    throw Error(ErrorKind::kInternal, "DMA engine received non-DMA instruction " + instructionName(instruction));
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
