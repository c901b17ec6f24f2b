// HBM at bandwidth-and-latency level: one FCFS BandwidthServer. A transfer of
// B bytes that finds HBM idle takes ceil(B / bytes_per_cycle) + latency_cycles.
#pragma once

#include "sim/common/bandwidth_server.hpp"
#include "sim/hbm/hbm_timing.hpp"

namespace tpusim {

class BandwidthTiming : public HbmTiming {
 public:
  BandwidthTiming(const ClockDomain& clock, ChannelTiming timing, Counter& busy)
      : m_clock(clock), m_channel(timing), m_busy(busy) {}

  void transport(const HbmAccess& access, sc_core::sc_time& delay) override {
    const uint64_t arrival = m_clock.cyclesAt(sc_core::sc_time_stamp() + delay);
    const ChannelGrant grant = m_channel.request(arrival, access.bytes());
    delay = m_clock.cycles(grant.done_cycle) - sc_core::sc_time_stamp();
    m_busy.add(grant.busy_cycles);
  }
  double peakBytesPerCycle() const override { return m_channel.timing().bytes_per_cycle; }

 private:
  const ClockDomain& m_clock;
  BandwidthServer m_channel;
  Counter& m_busy;
};

}  // namespace tpusim
