// The organisation and timing of an HBM DRAM device, for the command-level
// model of dram_model.hpp. Every timing is in DRAM clock cycles at clock_mhz,
// where the clock is the one whose both edges carry data (data rate per pin =
// 2 x clock_mhz Mb/s), so a burst of BL beats takes BL / 2 cycles. The presets
// (dram_presets.hpp) cite where each number comes from.
#pragma once

#include <cstdint>
#include <string>

namespace tpusim {

enum class PagePolicy {
  kOpen,    // a row stays open after an access until a conflict or a refresh closes it
  kClosed,  // every access auto-precharges its bank (RDA / WRA)
};

const char* pagePolicyName(PagePolicy policy);
// "open" or "closed"; anything else is an invalid-config error.
PagePolicy parsePagePolicy(const std::string& name);

struct DramTiming {
  uint64_t tRCD = 0;    // ACT to RD/WR, same bank
  uint64_t tRP = 0;     // PRE to ACT, same bank
  uint64_t tRAS = 0;    // ACT to PRE, same bank
  uint64_t tRC = 0;     // ACT to ACT, same bank
  uint64_t tCL = 0;     // RD to first data beat (read latency)
  uint64_t tCWL = 0;    // WR to first data beat (write latency)
  uint64_t tWR = 0;     // last write data beat to PRE, same bank (write recovery)
  uint64_t tRTP = 0;    // RD to PRE, same bank
  uint64_t tCCD_S = 0;  // RD to RD (or WR to WR), different bank groups
  uint64_t tCCD_L = 0;  // RD to RD (or WR to WR), same bank group
  uint64_t tRRD_S = 0;  // ACT to ACT, different bank groups
  uint64_t tRRD_L = 0;  // ACT to ACT, same bank group
  uint64_t tFAW = 0;    // window holding at most four ACTs
  uint64_t tWTR_S = 0;  // last write data beat to RD, different bank groups
  uint64_t tWTR_L = 0;  // last write data beat to RD, same bank group
  uint64_t tRTW = 0;    // RD to WR, any bank (data-bus turnaround)
  uint64_t tRFC = 0;    // REF to any command (all banks of the pseudo-channel busy)
  uint64_t tREFI = 0;   // interval between REF commands
};

struct DramConfig {
  std::string name;
  double clock_mhz = 0;
  // Organisation. Channels are counted per stack; each channel is split into
  // pseudo-channels with their own banks and data bus (HBM pseudo-channel mode).
  uint64_t stacks = 0;
  uint64_t channels = 0;
  uint64_t pseudo_channels = 0;
  uint64_t bank_groups = 0;
  uint64_t banks_per_group = 0;
  uint64_t rows = 0;
  uint64_t columns = 0;       // bursts per row
  uint64_t burst_length = 0;  // beats per burst
  uint64_t bus_bits = 0;      // data-bus width per pseudo-channel
  DramTiming timing;
  // Controller.
  PagePolicy page_policy = PagePolicy::kOpen;
  // Fields of the address from most to least significant, '_'-separated:
  // ro (row), ba (bank), bg (bank group), ch (stack x channel), pc (pseudo-channel),
  // co (column, in bursts). The byte offset within a burst sits below all of them.
  std::string address_mapping = "ro_ba_co_bg_ch_pc";
  uint64_t queue_depth = 32;  // requests per pseudo-channel the scheduler may reorder
};

// Throws Error (kInvalidConfig) with a one-line message for an impossible
// configuration: a zero count, clock or burst, an odd burst length, timings
// that contradict each other (tRAS < tRCD, tRC < tRAS + tRP, tCCD_L < tCCD_S,
// tRRD_L < tRRD_S, tWTR_L < tWTR_S, tRFC >= tREFI, tCCD_S < burst cycles),
// or an unknown page policy or address mapping.
//
// tFAW < 4 x tRRD_S is allowed: the window then never binds (four ACTs spaced
// tRRD_S apart already span more than tFAW), which JEDEC does not forbid.
void checkDramConfig(const DramConfig& config);

inline uint64_t burstCycles(const DramConfig& c) {
  return c.burst_length / 2;
}
inline uint64_t burstBytes(const DramConfig& c) {
  return c.burst_length * c.bus_bits / 8;
}
inline uint64_t banksPerPseudoChannel(const DramConfig& c) {
  return c.bank_groups * c.banks_per_group;
}
inline uint64_t pseudoChannelCount(const DramConfig& c) {
  return c.stacks * c.channels * c.pseudo_channels;
}
inline uint64_t capacityBytes(const DramConfig& c) {
  return pseudoChannelCount(c) * banksPerPseudoChannel(c) * c.rows * c.columns * burstBytes(c);
}
// Peak bandwidth of the whole device: every data bus busy every cycle.
inline double peakBytesPerCycle(const DramConfig& c) {
  return static_cast<double>(pseudoChannelCount(c) * burstBytes(c)) / static_cast<double>(burstCycles(c));
}
inline double peakGBps(const DramConfig& c) {
  return peakBytesPerCycle(c) * c.clock_mhz / 1000.0;
}

// Cycles at clock_mhz covering ns nanoseconds, rounded up (JEDEC rounds timings up to whole clocks).
uint64_t cyclesOf(double ns, double clock_mhz);

}  // namespace tpusim
