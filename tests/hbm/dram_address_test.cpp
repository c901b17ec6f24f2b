// Address mapping (address_map.hpp): field order by name, round trip.
#include <gtest/gtest.h>

#include <random>

#include "sim/common/error.hpp"
#include "sim/hbm/dram/address_map.hpp"
#include "sim/hbm/dram/dram_presets.hpp"

namespace tpusim {
namespace {

AddressMap mapOf(const std::string& mapping) {
  DramConfig c = hbm2Config();
  c.address_mapping = mapping;
  return AddressMap(c);
}

TEST(DramAddress, ChannelInterleavedMappingSpreadsConsecutiveBursts) {
  // ro_ba_co_bg_ch_pc on HBM2 (32 B bursts, 2 pc, 8 ch, 4 bg): byte 32 is the
  // next pseudo-channel, 64 the next channel, 2 x 8 x 32 = 512 the next bank group,
  // 4 x 512 = 2048 the next column.
  const AddressMap map = mapOf("ro_ba_co_bg_ch_pc");
  EXPECT_EQ(map.decode(31).pseudo_channel, 0u);
  EXPECT_EQ(map.decode(32).pseudo_channel, 1u);
  EXPECT_EQ(map.decode(64).channel, 1u);
  EXPECT_EQ(map.decode(512).bank_group, 1u);
  EXPECT_EQ(map.decode(2048).column, 1u);
  // 32 columns x 2048 = 64 KiB per bank row across the device; 4 banks later a new row.
  EXPECT_EQ(map.decode(65536).bank, 1u);
  EXPECT_EQ(map.decode(4 * 65536).row, 1u);
}

TEST(DramAddress, RowContiguousMappingKeepsAPageTogether) {
  // ro_ba_bg_ch_pc_co: the 32 bursts of a 1 KiB page are consecutive.
  const AddressMap map = mapOf("ro_ba_bg_ch_pc_co");
  EXPECT_EQ(map.decode(32).column, 1u);
  EXPECT_EQ(map.decode(1023).column, 31u);
  EXPECT_EQ(map.decode(1024).pseudo_channel, 1u);
  EXPECT_EQ(map.decode(1024).column, 0u);
}

TEST(DramAddress, DecodeAndEncodeAreInverse) {
  for (const char* mapping : {"ro_ba_co_bg_ch_pc", "ro_ba_bg_ch_pc_co", "co_ro_pc_ba_ch_bg"}) {
    const AddressMap map = mapOf(mapping);
    std::mt19937_64 random(7);
    for (int i = 0; i < 1000; ++i) {
      const uint64_t address = (random() % (capacityBytes(hbm2Config()) / 32)) * 32;
      EXPECT_EQ(map.encode(map.decode(address)), address) << mapping;
    }
  }
}

TEST(DramAddress, UnknownOrRepeatedFieldsAreErrors) {
  EXPECT_THROW(mapOf("ro_ba_bg_ch_pc_cl"), Error);
  EXPECT_THROW(mapOf("ro_ro_bg_ch_pc_co"), Error);
  EXPECT_THROW(mapOf("ro_ba_bg_ch_pc_co_ro"), Error);
  EXPECT_THROW(mapOf(""), Error);
  try {
    mapOf("ro_ba_bg_ch_pc_cl");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidConfig);
    EXPECT_NE(std::string(e.what()).find("unknown field 'cl'"), std::string::npos);
  }
}

}  // namespace
}  // namespace tpusim
