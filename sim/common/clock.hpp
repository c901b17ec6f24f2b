// A clock domain: converts between cycles of one clock and SystemC time.
// The period is rounded to whole picoseconds (SystemC's resolution); every
// wait in a domain is a whole number of periods, so cycle counts read back
// from simulated time are exact integers.
#pragma once

#include <cstdint>

#include <systemc>

namespace tpusim {

class ClockDomain {
 public:
  explicit ClockDomain(double frequency_hz);

  double frequencyHz() const { return m_frequency_hz; }
  sc_core::sc_time period() const { return m_period; }
  sc_core::sc_time cycles(uint64_t count) const { return m_period * static_cast<double>(count); }
  // Whole cycles elapsed at time `t` (t is a multiple of the period in this domain).
  uint64_t cyclesAt(const sc_core::sc_time& t) const;
  uint64_t now() const { return cyclesAt(sc_core::sc_time_stamp()); }
  // Whole cycles needed to cover `seconds`, rounded up.
  uint64_t cyclesCovering(double seconds) const;

 private:
  double m_frequency_hz;
  uint64_t m_period_ps;
  sc_core::sc_time m_period;
};

}  // namespace tpusim
