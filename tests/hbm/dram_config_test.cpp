// DramConfig checks and the presets' organisation (dram_config.hpp, dram_presets.hpp).
#include <gtest/gtest.h>

#include <functional>

#include "sim/common/error.hpp"
#include "sim/hbm/dram/dram_presets.hpp"

namespace tpusim {
namespace {

// The message of the invalid-config error that check throws for the mutated config.
std::string errorOf(const std::function<void(DramConfig&)>& mutate) {
  DramConfig c = hbm2Config();
  mutate(c);
  try {
    checkDramConfig(c);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidConfig);
    const std::string message = e.what();
    EXPECT_EQ(message.find('\n'), std::string::npos);
    return message;
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(DramConfig, PresetsAreValidAndHaveTheirPublishedPeak) {
  // 8 ch x 2 pc x 64 bit x 2.0 Gb/s / 8 = 256 GB/s; HBM2E at 3.2 Gb/s 409.6;
  // HBM3 16 ch x 2 pc x 32 bit x 6.4 Gb/s / 8 = 819.2 GB/s.
  EXPECT_NO_THROW(checkDramConfig(hbm2Config()));
  EXPECT_NO_THROW(checkDramConfig(hbm2eConfig()));
  EXPECT_NO_THROW(checkDramConfig(hbm3Config()));
  EXPECT_DOUBLE_EQ(peakGBps(hbm2Config()), 256.0);
  EXPECT_DOUBLE_EQ(peakGBps(hbm2eConfig()), 409.6);
  EXPECT_DOUBLE_EQ(peakGBps(hbm3Config()), 819.2);
  EXPECT_EQ(capacityBytes(hbm2Config()), 4ull << 30);
  EXPECT_EQ(capacityBytes(hbm2eConfig()), 8ull << 30);
  EXPECT_EQ(capacityBytes(hbm3Config()), 16ull << 30);
  EXPECT_EQ(burstBytes(hbm2Config()), 32u);
  EXPECT_EQ(burstBytes(hbm3Config()), 32u);
  EXPECT_EQ(dramPreset("hbm3").name, "hbm3");
}

TEST(DramConfig, NanosecondsRoundUpToWholeCycles) {
  EXPECT_EQ(cyclesOf(14, 1000), 14u);  // exact
  EXPECT_EQ(cyclesOf(14, 1600), 23u);  // 22.4
  EXPECT_EQ(cyclesOf(3900, 3200), 12480u);
}

TEST(DramConfig, ImpossibleValuesGiveOneLineErrors) {
  EXPECT_NE(errorOf([](DramConfig& c) { c.banks_per_group = 0; }).find("banks_per_group must be at least 1"),
            std::string::npos);
  EXPECT_NE(errorOf([](DramConfig& c) { c.channels = 0; }).find("channels"), std::string::npos);
  EXPECT_NE(errorOf([](DramConfig& c) { c.clock_mhz = 0; }).find("clock_mhz"), std::string::npos);
  EXPECT_NE(errorOf([](DramConfig& c) { c.bus_bits = 0; }).find("bus_bits"), std::string::npos);
  EXPECT_NE(errorOf([](DramConfig& c) { c.burst_length = 0; }).find("burst_length"), std::string::npos);
  EXPECT_NE(errorOf([](DramConfig& c) { c.burst_length = 3; }).find("even"), std::string::npos);
  EXPECT_NE(errorOf([](DramConfig& c) { c.timing.tRAS = c.timing.tRCD - 1; }).find("tRAS = 13 is below tRCD = 14"),
            std::string::npos);
  EXPECT_NE(errorOf([](DramConfig& c) { c.timing.tRC = 46; }).find("tRC = 46 is below tRAS + tRP = 47"),
            std::string::npos);
  EXPECT_NE(errorOf([](DramConfig& c) { c.timing.tCCD_L = 1; }).find("tCCD_L"), std::string::npos);
  EXPECT_NE(errorOf([](DramConfig& c) { c.timing.tCCD_S = 1; }).find("burst"), std::string::npos);
  EXPECT_NE(errorOf([](DramConfig& c) { c.timing.tRFC = c.timing.tREFI; }).find("tREFI"), std::string::npos);
  EXPECT_NE(errorOf([](DramConfig& c) { c.timing.tRCD = 0; }).find("tRCD must be at least 1 cycle"), std::string::npos);
  EXPECT_NE(errorOf([](DramConfig& c) { c.address_mapping = "ro_ba_bg_ch_pc"; }).find("lacks a field"),
            std::string::npos);
  EXPECT_NE(errorOf([](DramConfig& c) { c.queue_depth = 0; }).find("DRAM config 'hbm2': queue_depth"),
            std::string::npos);
}

TEST(DramConfig, AFourActivateWindowShorterThanFourRrdsIsAllowed) {
  // JEDEC does not forbid it: the window then never binds.
  DramConfig c = hbm2Config();
  c.timing.tFAW = 4 * c.timing.tRRD_S - 1;
  EXPECT_NO_THROW(checkDramConfig(c));
}

TEST(DramConfig, UnknownNamesAreErrors) {
  EXPECT_EQ(parsePagePolicy("closed"), PagePolicy::kClosed);
  EXPECT_THROW(parsePagePolicy("half-open"), Error);
  EXPECT_THROW(dramPreset("hbm4"), Error);
}

}  // namespace
}  // namespace tpusim
