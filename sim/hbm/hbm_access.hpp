// What a DMA transaction asks of the memory behind the DMA engines (HBM, or a
// module placed in front of it), carried on the TLM-2.0 generic payload:
//   command      TLM_READ_COMMAND for HBM -> VMEM, TLM_WRITE_COMMAND for VMEM -> HBM
//   address      HBM byte address of the first byte (DmaTransfer.hbm_address)
//   data_length  bytes moved (DmaTransfer.bytes); data_ptr is null (timing only)
//   DmaStride    extension, present only on a strided transfer: rows of row_bytes,
//                row r at address + r * row_stride (rows x row_bytes = data_length)
#pragma once

#include <cstdint>

#include <tlm>

namespace tpusim {

struct DmaStride : tlm::tlm_extension<DmaStride> {
  uint64_t rows = 0;
  uint64_t row_bytes = 0;
  uint64_t row_stride = 0;

  tlm::tlm_extension_base* clone() const override { return new DmaStride(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override { *this = static_cast<const DmaStride&>(other); }
};

// A transaction's bytes as rows: a contiguous one is one row of all its bytes.
struct HbmAccess {
  uint64_t address = 0;
  uint64_t rows = 1;
  uint64_t row_bytes = 0;
  uint64_t row_stride = 0;
  bool is_write = false;
  uint64_t bytes() const { return rows * row_bytes; }
};

inline HbmAccess accessOf(const tlm::tlm_generic_payload& payload) {
  HbmAccess access;
  access.address = payload.get_address();
  access.is_write = payload.is_write();
  const DmaStride* stride = payload.get_extension<DmaStride>();
  if (stride != nullptr) {
    access.rows = stride->rows;
    access.row_bytes = stride->row_bytes;
    access.row_stride = stride->row_stride;
  } else {
    access.row_bytes = payload.get_data_length();
    access.row_stride = access.row_bytes;
  }
  return access;
}

}  // namespace tpusim
