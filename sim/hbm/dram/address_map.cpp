#include "sim/hbm/dram/address_map.hpp"

#include <sstream>

#include "sim/common/error.hpp"

namespace tpusim {

namespace {

struct FieldName {
  const char* token;
  AddressField field;
};
constexpr FieldName kFieldNames[kAddressFields] = {
    {"ro", AddressField::kRow},     {"ba", AddressField::kBank},          {"bg", AddressField::kBankGroup},
    {"ch", AddressField::kChannel}, {"pc", AddressField::kPseudoChannel}, {"co", AddressField::kColumn},
};

uint64_t countOf(const DramConfig& c, AddressField field) {
  switch (field) {
    case AddressField::kRow: return c.rows;
    case AddressField::kBank: return c.banks_per_group;
    case AddressField::kBankGroup: return c.bank_groups;
    case AddressField::kChannel: return c.stacks * c.channels;
    case AddressField::kPseudoChannel: return c.pseudo_channels;
    case AddressField::kColumn: return c.columns;
  }
  return 1;
}

uint64_t& slotOf(DramAddress& a, AddressField field) {
  switch (field) {
    case AddressField::kRow: return a.row;
    case AddressField::kBank: return a.bank;
    case AddressField::kBankGroup: return a.bank_group;
    case AddressField::kChannel: return a.channel;
    case AddressField::kPseudoChannel: return a.pseudo_channel;
    case AddressField::kColumn: return a.column;
  }
  return a.row;
}

}  // namespace

AddressMap::AddressMap(const DramConfig& config) : m_burst_bytes(burstBytes(config)) {
  const std::string& mapping = config.address_mapping;
  auto bad = [&](const std::string& why) {
    return Error(ErrorKind::kInvalidConfig, "address mapping '" + mapping + "' " + why +
                                                " (expected the six fields ro, ba, bg, ch, pc, co in some order, "
                                                "'_'-separated, most significant first, e.g. ro_ba_co_bg_ch_pc)");
  };
  std::array<AddressField, kAddressFields> msb_first{};
  std::array<bool, kAddressFields> seen{};
  size_t count = 0;
  std::istringstream in(mapping);
  std::string token;
  while (std::getline(in, token, '_')) {
    const FieldName* found = nullptr;
    for (const FieldName& name : kFieldNames) {
      if (token == name.token) found = &name;
    }
    if (found == nullptr) throw bad("has an unknown field '" + token + "'");
    const size_t index = static_cast<size_t>(found->field);
    if (seen[index]) throw bad("names '" + token + "' twice");
    if (count == kAddressFields) throw bad("has too many fields");
    seen[index] = true;
    msb_first[count++] = found->field;
  }
  if (count != kAddressFields) throw bad("lacks a field");
  for (size_t i = 0; i < kAddressFields; ++i) {
    m_lsb_first[i] = msb_first[kAddressFields - 1 - i];
    m_radix[i] = countOf(config, m_lsb_first[i]);
  }
}

DramAddress AddressMap::decode(uint64_t address) const {
  DramAddress where;
  uint64_t rest = address / m_burst_bytes;
  for (size_t i = 0; i < kAddressFields; ++i) {
    slotOf(where, m_lsb_first[i]) = rest % m_radix[i];
    rest /= m_radix[i];
  }
  return where;
}

uint64_t AddressMap::interleaveBytes() const {
  uint64_t bytes = m_burst_bytes;
  for (size_t i = 0; i < kAddressFields; ++i) {
    const AddressField field = m_lsb_first[i];
    if (field == AddressField::kColumn || field == AddressField::kBank || field == AddressField::kRow) break;
    bytes *= m_radix[i];
  }
  return bytes;
}

uint64_t AddressMap::encode(const DramAddress& where) const {
  DramAddress copy = where;
  uint64_t value = 0;
  for (size_t i = kAddressFields; i-- > 0;) value = value * m_radix[i] + slotOf(copy, m_lsb_first[i]);
  return value * m_burst_bytes;
}

}  // namespace tpusim
