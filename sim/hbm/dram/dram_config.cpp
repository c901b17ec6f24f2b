#include "sim/hbm/dram/dram_config.hpp"

#include <cmath>

#include "sim/common/error.hpp"
#include "sim/hbm/dram/address_map.hpp"

namespace tpusim {

const char* pagePolicyName(PagePolicy policy) {
  switch (policy) {
    case PagePolicy::kOpen: return "open";
    case PagePolicy::kClosed: return "closed";
  }
  return "?";
}

PagePolicy parsePagePolicy(const std::string& name) {
  for (PagePolicy policy : {PagePolicy::kOpen, PagePolicy::kClosed}) {
    if (name == pagePolicyName(policy)) return policy;
  }
  throw Error(ErrorKind::kInvalidConfig, "unknown DRAM page policy '" + name + "' (choose open or closed)");
}

uint64_t cyclesOf(double ns, double clock_mhz) {
  // The small slack keeps an exact product (14 ns x 1000 MHz = 14.000000001) from rounding up a whole clock.
  return static_cast<uint64_t>(std::ceil(ns * clock_mhz / 1000.0 - 1e-9));
}

void checkDramConfig(const DramConfig& c) {
  const std::string where = "DRAM config '" + c.name + "': ";
  auto fail = [&](const std::string& why) { throw Error(ErrorKind::kInvalidConfig, where + why); };
  if (!(c.clock_mhz > 0) || !std::isfinite(c.clock_mhz)) fail("clock_mhz must be positive");
  const std::pair<uint64_t, const char*> counts[] = {
      {c.stacks, "stacks"},
      {c.channels, "channels"},
      {c.pseudo_channels, "pseudo_channels"},
      {c.bank_groups, "bank_groups"},
      {c.banks_per_group, "banks_per_group"},
      {c.rows, "rows"},
      {c.columns, "columns"},
      {c.burst_length, "burst_length"},
      {c.bus_bits, "bus_bits"},
      {c.queue_depth, "queue_depth"},
  };
  for (const auto& [value, what] : counts) {
    if (value == 0) fail(std::string(what) + " must be at least 1");
  }
  if (c.burst_length % 2 != 0) fail("burst_length " + std::to_string(c.burst_length) + " must be even (DDR)");
  if (c.bus_bits % 8 != 0) fail("bus_bits " + std::to_string(c.bus_bits) + " must be a whole number of bytes");
  const DramTiming& t = c.timing;
  const std::pair<uint64_t, const char*> positive[] = {
      {t.tRCD, "tRCD"},     {t.tRP, "tRP"},       {t.tRAS, "tRAS"}, {t.tRC, "tRC"},     {t.tCL, "tCL"},
      {t.tCCD_S, "tCCD_S"}, {t.tRRD_S, "tRRD_S"}, {t.tRFC, "tRFC"}, {t.tREFI, "tREFI"},
  };
  for (const auto& [value, what] : positive) {
    if (value == 0) fail(std::string(what) + " must be at least 1 cycle");
  }
  auto atLeast = [&](uint64_t big, const char* big_name, uint64_t small, const std::string& small_name) {
    if (big < small) {
      fail(std::string(big_name) + " = " + std::to_string(big) + " is below " + small_name + " = " +
           std::to_string(small) + " cycles");
    }
  };
  // A row must be open long enough to be read (tRAS >= tRCD); a bank cycle holds
  // an activation and a precharge (tRC >= tRAS + tRP); the same-bank-group
  // spacings are never shorter than the different-group ones.
  atLeast(t.tRAS, "tRAS", t.tRCD, "tRCD");
  atLeast(t.tRC, "tRC", t.tRAS + t.tRP, "tRAS + tRP");
  atLeast(t.tCCD_L, "tCCD_L", t.tCCD_S, "tCCD_S");
  atLeast(t.tRRD_L, "tRRD_L", t.tRRD_S, "tRRD_S");
  atLeast(t.tWTR_L, "tWTR_L", t.tWTR_S, "tWTR_S");
  // Back-to-back bursts must not overlap on the data bus.
  atLeast(t.tCCD_S, "tCCD_S", burstCycles(c), "the burst (burst_length / 2)");
  if (t.tRFC >= t.tREFI) {
    fail("tRFC = " + std::to_string(t.tRFC) + " must be below tREFI = " + std::to_string(t.tREFI) + " cycles");
  }
  try {
    AddressMap map(c);
  } catch (const Error& e) {
    fail(e.what());
  }
}

}  // namespace tpusim
