#include "sim/host/host_config.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "sim/common/error.hpp"

namespace tpusim {

namespace {

std::string number(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

}  // namespace

void requirePositive(double value, const char* name, const char* unit) {
  if (!std::isfinite(value) || value <= 0) {
    throw Error(ErrorKind::kInvalidConfig,
                std::string("parameter ") + name + " must be > 0 (got " + number(value) + " " + unit + ")");
  }
}

void requireNonNegative(double value, const char* name, const char* unit) {
  if (!std::isfinite(value) || value < 0) {
    throw Error(ErrorKind::kInvalidConfig,
                std::string("parameter ") + name + " must be >= 0 (got " + number(value) + " " + unit + ")");
  }
}

HostPipelineConfig hostConfigOf(const config::HardwareConfig& hw) {
  const config::HostConfig& h = hw.host();
  HostPipelineConfig host;
  // Negative integers from a hand-built message become huge unsigned values;
  // clamp them to 0 so that checkHostConfig reports them as zero.
  auto count = [](int64_t value) { return value < 0 ? uint64_t{0} : static_cast<uint64_t>(value); };
  host.storage_read_gbps = h.storage_read_gbps();
  host.example_bytes = count(h.example_bytes());
  host.map_us = h.map_us();
  host.num_parallel_calls = count(h.num_parallel_calls());
  host.prefetch_batches = count(h.prefetch_batches());
  host.cache_in_memory = h.cache() == "memory";
  host.epoch_examples = count(h.epoch_examples());
  host.infeed_bytes_per_example = count(h.infeed_bytes_per_example());
  host.pcie_gbps = h.pcie_gbps();
  host.pcie_latency_us = h.pcie_latency_us();
  host.checkpoint_every_steps = count(h.checkpoint_every_steps());
  host.storage_write_gbps = h.storage_write_gbps();
  return host;
}

void checkHostConfig(const HostPipelineConfig& host) {
  requirePositive(host.storage_read_gbps, "host.storage_read_gbps", "GB/s");
  requirePositive(static_cast<double>(host.example_bytes), "host.example_bytes", "bytes");
  requireNonNegative(host.map_us, "host.map_us", "us");
  requirePositive(static_cast<double>(host.num_parallel_calls), "host.num_parallel_calls", "threads");
  requirePositive(static_cast<double>(host.epoch_examples), "host.epoch_examples", "examples");
  requirePositive(static_cast<double>(host.infeed_bytes_per_example), "host.infeed_bytes_per_example", "bytes");
  requirePositive(host.pcie_gbps, "host.pcie_gbps", "GB/s");
  requireNonNegative(host.pcie_latency_us, "host.pcie_latency_us", "us");
  requirePositive(host.storage_write_gbps, "host.storage_write_gbps", "GB/s");
}

Picos transferPicos(uint64_t bytes, double gbps) {
  const double exact = static_cast<double>(bytes) * 1000.0 / gbps;
  const double nearest = std::round(exact);
  // 1e6 bytes at 15.75 GB/s must give 63492064 ps, and 1e6 at 10 GB/s exactly
  // 1e8: a quotient within float error of an integer is that integer.
  if (std::fabs(exact - nearest) <= 1e-9 * std::max(1.0, exact)) return static_cast<Picos>(nearest);
  return static_cast<Picos>(std::ceil(exact));
}

Picos picosFromMicros(double us) {
  return static_cast<Picos>(std::llround(us * 1e6));
}

Picos picosFromCycles(uint64_t cycles, double clock_mhz) {
  return static_cast<Picos>(std::llround(static_cast<double>(cycles) * 1e6 / clock_mhz));
}

double secondsFromPicos(Picos ps) {
  return static_cast<double>(ps) * 1e-12;
}

}  // namespace tpusim
