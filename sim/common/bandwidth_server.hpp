// A first-come-first-served channel with a peak rate and a fixed latency:
// the timing core of HBM, PCIe and ICI links at bandwidth-and-latency level.
// A transfer of B bytes arriving at cycle t starts when the channel is free,
// occupies it for ceil(B / bytes_per_cycle) cycles and completes
// latency_cycles after its last byte.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace tpusim {

struct ChannelTiming {
  double bytes_per_cycle;
  uint64_t latency_cycles;
};

struct ChannelGrant {
  uint64_t start_cycle;
  uint64_t busy_cycles;
  uint64_t done_cycle;
};

class BandwidthServer {
 public:
  explicit BandwidthServer(ChannelTiming timing) : m_timing(timing) {}

  static uint64_t busyCycles(uint64_t bytes, const ChannelTiming& timing) {
    return static_cast<uint64_t>(std::ceil(static_cast<double>(bytes) / timing.bytes_per_cycle));
  }

  ChannelGrant request(uint64_t arrival_cycle, uint64_t bytes) {
    return hold(arrival_cycle, busyCycles(bytes, m_timing));
  }
  // A transfer whose caller knows how long it holds the channel.
  ChannelGrant hold(uint64_t arrival_cycle, uint64_t busy_cycles) {
    const uint64_t start = std::max(arrival_cycle, m_next_free_cycle);
    m_next_free_cycle = start + busy_cycles;
    return ChannelGrant{start, busy_cycles, start + busy_cycles + m_timing.latency_cycles};
  }

  const ChannelTiming& timing() const { return m_timing; }

 private:
  ChannelTiming m_timing;
  uint64_t m_next_free_cycle = 0;
};

}  // namespace tpusim
