// A DMA engine of a TensorCore: moves one Program DmaTransfer at a time
// between HBM and VMEM through the chip's HBM (a TLM-2.0 initiator; the
// transfer is timing-only, no data is carried).
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm>

#include "sim/common/exec_unit.hpp"

namespace tpusim {

class DmaEngine : public ExecUnit {
 public:
  tlm_utils::simple_initiator_socket<DmaEngine> socket;

  DmaEngine(sc_core::sc_module_name name, const std::string& stat_prefix, const UnitContext& context);

 protected:
  void execute(const program::Instruction& instruction) override;

 private:
  uint64_t hbmAddress(const program::Instruction& instruction) const;

  Counter& m_bytes;
};

}  // namespace tpusim
