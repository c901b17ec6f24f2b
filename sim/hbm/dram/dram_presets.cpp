// Sources. Organisation and data rates: JEDEC JESD235 (HBM2, HBM2E in its
// later revisions) and JESD238 (HBM3), as summarised in the vendors' product
// briefs (SK hynix HBM2 2.0 Gb/s, Samsung Flashbolt HBM2E 3.2 Gb/s 410 GB/s,
// SK hynix HBM3 6.4 Gb/s 819 GB/s). Peak per stack = channels x pseudo-channels
// x bus_bits x Gb/s / 8: 8 x 2 x 64 x 2.0 / 8 = 256 GB/s (HBM2),
// 8 x 2 x 64 x 3.2 / 8 = 409.6 GB/s (HBM2E), 16 x 2 x 32 x 6.4 / 8 = 819.2 GB/s (HBM3).
// The core timings in nanoseconds (tRCD, tRP, tRAS, tRC, tRFC, tREFI) are
// those of DRAM arrays of this generation; the cycle counts of the column
// path (CL, WL, tCCD, tRRD, tWTR) are typical values, assumed, not quoted
// from a speed-bin table. They are converted with cyclesOf (rounded up).
#include "sim/hbm/dram/dram_presets.hpp"

#include <algorithm>
#include <cmath>

#include "sim/common/error.hpp"

namespace tpusim {

namespace {

// Timings shared by the presets, in ns unless a name says cycles.
struct CoreNs {
  double rcd, rp, ras, rc, cl, wr, rtp, faw, rfc, refi;
};

DramTiming timingOf(const CoreNs& ns, double mhz, uint64_t burst) {
  DramTiming t;
  t.tRCD = cyclesOf(ns.rcd, mhz);
  t.tRP = cyclesOf(ns.rp, mhz);
  t.tRAS = cyclesOf(ns.ras, mhz);
  // A bank cycle is at least an activation and a precharge, which separate
  // rounding up can break (at 1800 MHz: 60 + 26 > ceil(47 ns) = 85).
  t.tRC = std::max(cyclesOf(ns.rc, mhz), t.tRAS + t.tRP);
  t.tCL = cyclesOf(ns.cl, mhz);
  t.tWR = cyclesOf(ns.wr, mhz);
  t.tRTP = cyclesOf(ns.rtp, mhz);
  t.tFAW = cyclesOf(ns.faw, mhz);
  t.tRFC = cyclesOf(ns.rfc, mhz);
  t.tREFI = cyclesOf(ns.refi, mhz);
  // Different bank groups: back-to-back bursts (tCCD_S = BL / 2, JEDEC's
  // minimum, which is what lets HBM stream at its peak). Same group: twice that
  // (typical, assumed).
  t.tCCD_S = burst;
  t.tCCD_L = 2 * burst;
  return t;
}

DramConfig pseudoChannelMode(const char* name, double mhz, uint64_t channels, uint64_t bus_bits, uint64_t burst_length,
                             uint64_t rows) {
  DramConfig c;
  c.name = name;
  c.clock_mhz = mhz;
  c.stacks = 1;
  c.channels = channels;
  c.pseudo_channels = 2;  // JESD235/238 pseudo-channel mode: two per channel
  c.bank_groups = 4;      // 4 bank groups x 4 banks per pseudo-channel (typical, assumed for these densities)
  c.banks_per_group = 4;
  c.rows = rows;
  c.columns = 32;  // 1 KiB page per pseudo-channel (JESD235 pseudo-channel mode) = 32 bursts of 32 B
  c.burst_length = burst_length;
  c.bus_bits = bus_bits;
  return c;
}

void setTurnaround(DramTiming& t, uint64_t burst, uint64_t cwl, uint64_t wtr_s, uint64_t wtr_l, uint64_t rrd_s,
                   uint64_t rrd_l) {
  t.tCWL = cwl;
  t.tWTR_S = wtr_s;
  t.tWTR_L = wtr_l;
  t.tRRD_S = rrd_s;
  t.tRRD_L = rrd_l;
  // RD to WR: the read's burst must leave the bus, plus 2 cycles for the bus to
  // turn around (typical, assumed), before the write's data arrives tCWL later.
  t.tRTW = t.tCL + burst + 2 > cwl ? t.tCL + burst + 2 - cwl : 1;
}

}  // namespace

DramConfig hbm2Config() {
  return hbm2ConfigAt(2.0);
}

DramConfig hbm2ConfigAt(double pin_gbps) {
  // 2.0 Gb/s per pin: 1000 MHz. 8 channels of 128 bits = 16 pseudo-channels of
  // 64 bits, BL4 = 32 B per burst in 2 cycles. 4 GiB / 16 pseudo-channels / 16 banks
  // / 1 KiB = 16384 rows.
  DramConfig c = pseudoChannelMode("hbm2", pin_gbps * 500, 8, 64, 4, 16384);
  // tRCD = tRP = 14 ns, tRAS = 33 ns, tRC = 47 ns, RL = 14 ns (typical HBM2
  // datasheet values, assumed); tWR 15 ns and tRTP 5 ns (typical, assumed);
  // tFAW 30 ns (typical, assumed); tRFC 260 ns for a 4 Gb channel and tREFI
  // 3.9 us below 85 C (JESD235 refresh table; 260 ns assumed for this density).
  c.timing = timingOf({14, 14, 33, 47, 14, 15, 5, 30, 260, 3900}, c.clock_mhz, burstCycles(c));
  // WL 4, tWTR_S 3 / tWTR_L 8, tRRD_S 4 / tRRD_L 6 cycles (typical, assumed).
  setTurnaround(c.timing, burstCycles(c), 4, 3, 8, 4, 6);
  return c;
}

DramConfig hbm2eConfig() {
  return hbm2eConfigAt(3.2);
}

DramConfig hbm2eConfigAt(double pin_gbps) {
  // 3.2 Gb/s per pin: 1600 MHz. Same organisation as HBM2 with 16 Gb dies:
  // 8 GiB / 16 / 16 / 1 KiB = 32768 rows.
  DramConfig c = pseudoChannelMode("hbm2e", pin_gbps * 500, 8, 64, 4, 32768);
  // Array timings as HBM2 (typical, assumed); tRFC 350 ns for an 8 Gb channel
  // (JESD235 refresh table, assumed for this density).
  c.timing = timingOf({14, 14, 33, 47, 14, 15, 5, 30, 350, 3900}, c.clock_mhz, burstCycles(c));
  // WL 6, tWTR_S 4 / tWTR_L 12, tRRD_S 6 / tRRD_L 8 cycles (typical, assumed).
  setTurnaround(c.timing, burstCycles(c), 6, 4, 12, 6, 8);
  return c;
}

DramConfig hbm3Config() {
  return hbm3ConfigAt(6.4);
}

DramConfig hbm3ConfigAt(double pin_gbps) {
  // 6.4 Gb/s per pin: the data edges of a 3200 MHz clock. 16 channels of 64 bits
  // = 32 pseudo-channels of 32 bits (JESD238), BL8 = 32 B per burst in 4 cycles.
  // 16 GiB / 32 / 16 banks / 1 KiB = 32768 rows.
  DramConfig c = pseudoChannelMode("hbm3", pin_gbps * 500, 16, 32, 8, 32768);
  // tRCD = tRP = 14 ns, tRAS = 33 ns, tRC = 47 ns, RL = 15 ns, tWR 15 ns,
  // tRTP 5 ns, tFAW 16 ns (typical, assumed); tRFC 350 ns and tREFI 3.9 us
  // (typical all-bank values, assumed).
  c.timing = timingOf({14, 14, 33, 47, 15, 15, 5, 16, 350, 3900}, c.clock_mhz, burstCycles(c));
  // WL 8, tWTR_S 8 / tWTR_L 24, tRRD_S 8 / tRRD_L 12 cycles of 3200 MHz (typical, assumed).
  setTurnaround(c.timing, burstCycles(c), 8, 8, 24, 8, 12);
  return c;
}

DramConfig dramPreset(const std::string& name, double pin_gbps) {
  if (!(pin_gbps >= 0) || !std::isfinite(pin_gbps)) {
    throw Error(ErrorKind::kInvalidConfig, "DRAM pin rate " + std::to_string(pin_gbps) + " Gb/s must be positive");
  }
  if (name == "hbm2") return pin_gbps > 0 ? hbm2ConfigAt(pin_gbps) : hbm2Config();
  if (name == "hbm2e") return pin_gbps > 0 ? hbm2eConfigAt(pin_gbps) : hbm2eConfig();
  if (name == "hbm3") return pin_gbps > 0 ? hbm3ConfigAt(pin_gbps) : hbm3Config();
  throw Error(ErrorKind::kInvalidConfig, "unknown DRAM preset '" + name + "' (choose hbm2, hbm2e or hbm3)");
}

}  // namespace tpusim
