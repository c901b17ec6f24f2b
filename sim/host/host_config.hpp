// The host's parameters as plain numbers (from configs/hardware.proto's
// HostConfig, docs/host.md) and the time arithmetic of the host models.
//
// Host-side time is kept in integer picoseconds: storage, map threads and PCIe
// run on no chip clock, and integers keep every schedule exact and
// deterministic (a uint64 of picoseconds spans about 200 days).
#pragma once

#include <cstdint>

#include "configs/hardware.pb.h"

namespace tpusim {

using Picos = uint64_t;

struct HostPipelineConfig {
  double storage_read_gbps = 2;
  uint64_t example_bytes = 110000;
  double map_us = 2000;
  uint64_t num_parallel_calls = 8;
  uint64_t prefetch_batches = 2;
  bool cache_in_memory = false;
  uint64_t epoch_examples = 1281167;
  uint64_t infeed_bytes_per_example = 150528;
  double pcie_gbps = 15.75;
  double pcie_latency_us = 2;
  uint64_t checkpoint_every_steps = 0;
  double storage_write_gbps = 1;
};

// The host of a preset (host.*).
HostPipelineConfig hostConfigOf(const config::HardwareConfig& hw);
// Throws Error (kInvalidConfig) naming the parameter: zero threads, zero or
// non-finite bandwidth, zero bytes per example, a negative or non-finite time.
void checkHostConfig(const HostPipelineConfig& host);

// One-line kInvalidConfig errors for one value: "parameter host.pcie_gbps must be > 0 (got 0 GB/s)".
void requirePositive(double value, const char* name, const char* unit);
void requireNonNegative(double value, const char* name, const char* unit);

// Time to move `bytes` at `gbps` (1 GB/s = 1e9 bytes/s = 1e-3 bytes/ps), rounded
// up to a whole picosecond; an exact quotient is not rounded up by float error.
Picos transferPicos(uint64_t bytes, double gbps);
// Microseconds to the nearest picosecond.
Picos picosFromMicros(double us);
// Device cycles of a clock in MHz to picoseconds (rounded to nearest).
Picos picosFromCycles(uint64_t cycles, double clock_mhz);
double secondsFromPicos(Picos ps);

}  // namespace tpusim
