// Progress of one simulation on a stream (docs/python.md, "Progress of a single
// run"): nothing while a run is younger than a second of wall time, so short runs
// stay quiet; then, on a terminal, a bar that redraws itself at most five times a
// second, and otherwise (a log) one line every ten seconds. Each shows the
// instructions retired, the simulated cycles, the wall time and an ETA from the
// share of instructions retired so far.
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "sim/chip/driver.hpp"

namespace tpusim {

class ProgressPrinter {
 public:
  // `clock` gives wall seconds (steady); tests pass their own.
  ProgressPrinter(std::ostream& out, bool bar, std::function<double()> clock = {});

  // The first report (the simulation's start) starts the wall clock: compiling before
  // it does not count.
  void report(const SimProgress& progress);
  // The progress text itself, e.g. "41% 2,014/4,913 instructions, 1,048,576 simulated
  // cycles, 2.1 s elapsed, ETA 3.0 s".
  static std::string describe(const SimProgress& progress, double elapsed_s);

 private:
  std::ostream& m_out;
  bool m_bar;
  std::function<double()> m_clock;
  double m_start_s = -1;
  double m_last_s = -1;
  bool m_drawn = false;  // the bar's line is open
};

// A callback for simulate() printing to `out` (a bar when `bar`).
ProgressCallback progressTo(std::ostream& out, bool bar);

}  // namespace tpusim
