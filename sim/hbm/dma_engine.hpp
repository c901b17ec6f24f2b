// A DMA engine of a TensorCore: moves Program DmaTransfers between HBM and
// VMEM through the chip's HBM (a TLM-2.0 initiator; timing only, no data is
// carried; sim/hbm/hbm_access.hpp says what the payload holds).
//
// Up to `max_outstanding` transfers are in flight at once, each on its own
// slot thread. They issue in Program order (the head waits for its
// dependencies, then for a free slot) and retire in Program order: a transfer
// whose data is done waits for the earlier ones, as an in-order completion
// queue does. The lowering relies on that order (a store that overwrites bytes
// waits only for the latest load before it). Busy cycles are those with at
// least one transfer in flight.
#pragma once

#include <memory>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm>

#include "sim/common/exec_unit.hpp"

namespace tpusim {

class DmaEngine : public ExecUnit {
 public:
  tlm_utils::simple_initiator_socket<DmaEngine> socket;

  DmaEngine(sc_core::sc_module_name name, const std::string& stat_prefix, const UnitContext& context,
            uint64_t max_outstanding);
  ~DmaEngine() override;

 protected:
  // One transfer, start to end of its data (run on a slot thread).
  void execute(const program::Instruction& instruction) override;
  void dispatch(const program::Instruction& instruction, const TimelineEvent& event) override;

 private:
  class Slot;

  std::vector<std::unique_ptr<Slot>> m_slots;
  uint64_t m_in_flight = 0;
  uint64_t m_issued = 0;   // transfers handed to slots
  uint64_t m_retired = 0;  // transfers retired, in issue order
  sc_core::sc_event m_slot_freed;
  sc_core::sc_event m_retired_event;
  Counter& m_bytes;
  Counter& m_peak_in_flight;
};

}  // namespace tpusim
