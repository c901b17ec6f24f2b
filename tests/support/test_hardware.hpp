// Hardware for simulator tests: tpuv4 cut to one TensorCore at 1 GHz, so
// that cycles and nanoseconds coincide and closed forms stay readable.
#pragma once

#include "sim/common/params.hpp"

namespace tpusim::testing {

inline HardwareParams oneCoreAt1GHz() {
  HardwareParams hw = HardwareParams::load("tpuv4");
  hw.set("chip.tensor_cores", "1");
  hw.set("chip.clock_mhz", "1000");
  return hw;
}

}  // namespace tpusim::testing
