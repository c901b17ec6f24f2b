#include "sim/common/clock.hpp"

#include <cmath>

#include "sim/common/error.hpp"

namespace tpusim {

ClockDomain::ClockDomain(double frequency_hz) : m_frequency_hz(frequency_hz) {
  if (!(frequency_hz > 0)) throw Error(ErrorKind::kInvalidConfig, "clock frequency must be > 0");
  m_period_ps = static_cast<uint64_t>(std::llround(1e12 / frequency_hz));
  if (m_period_ps == 0) throw Error(ErrorKind::kInvalidConfig, "clock frequency above 1 THz");
  m_period = sc_core::sc_time(static_cast<double>(m_period_ps), sc_core::SC_PS);
}

uint64_t ClockDomain::cyclesAt(const sc_core::sc_time& t) const {
  return t.value() / m_period.value();
}

uint64_t ClockDomain::cyclesCovering(double seconds) const {
  // A tiny tolerance keeps exact multiples (e.g. 1 ns at 1 GHz) from rounding up.
  return static_cast<uint64_t>(std::ceil(seconds * m_frequency_hz - 1e-9));
}

}  // namespace tpusim
