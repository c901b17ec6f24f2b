// Physical byte address -> (channel, pseudo-channel, bank group, bank, row,
// column), in the field order that DramConfig::address_mapping names, most
// significant field first. Counts need not be powers of two: the address is
// taken apart by mixed-radix division from the least significant field up.
// The order is parsed once at set-up; decode() does a few divisions, no lookups.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "sim/hbm/dram/dram_config.hpp"

namespace tpusim {

struct DramAddress {
  uint64_t channel = 0;  // stack x channels + channel: 0 .. stacks x channels - 1
  uint64_t pseudo_channel = 0;
  uint64_t bank_group = 0;
  uint64_t bank = 0;  // within its bank group
  uint64_t row = 0;
  uint64_t column = 0;  // in bursts
};

enum class AddressField { kRow, kBank, kBankGroup, kChannel, kPseudoChannel, kColumn };
inline constexpr size_t kAddressFields = 6;

class AddressMap {
 public:
  // Throws Error (kInvalidConfig) if config.address_mapping is not a
  // permutation of ro, ba, bg, ch, pc, co.
  explicit AddressMap(const DramConfig& config);

  DramAddress decode(uint64_t address) const;
  // The inverse of decode for an in-range address (aligned to the burst).
  uint64_t encode(const DramAddress& where) const;
  // Bytes an address walks before its column, bank or row changes: the span of
  // the fields below all three (8 KiB for ro_ba_co_bg_ch_pc on one HBM2 stack).
  uint64_t interleaveBytes() const;

 private:
  std::array<AddressField, kAddressFields> m_lsb_first{};  // fields from least significant up
  std::array<uint64_t, kAddressFields> m_radix{};          // count of each field, same order
  uint64_t m_burst_bytes = 1;
};

}  // namespace tpusim
