// The progress printer (api/progress.hpp) on a fake wall clock: quiet for the first
// second, throttled after, an ETA from the share of instructions retired.
#include <gtest/gtest.h>

#include <sstream>

#include "api/progress.hpp"

namespace tpusim {
namespace {

struct FakeClock {
  double now = 100;
  std::function<double()> fn() {
    return [this] { return now; };
  }
};

SimProgress at(uint64_t retired, uint64_t cycles) { return {retired, 1000, cycles}; }

TEST(ProgressPrinter, DescribesRetiredCyclesElapsedAndEta) {
  EXPECT_EQ(ProgressPrinter::describe({250, 1000, 1234567}, 2.0),
            "25% 250/1,000 instructions, 1,234,567 simulated cycles, 2.0 s elapsed, ETA 6.0 s");
  EXPECT_EQ(ProgressPrinter::describe({1000, 1000, 5000}, 4.25), "100% 1,000/1,000 instructions, 5,000 simulated "
                                                                  "cycles, 4.2 s elapsed");
}

TEST(ProgressPrinter, ARunShorterThanASecondPrintsNothing) {
  FakeClock clock;
  std::ostringstream out;
  ProgressPrinter printer(out, false, clock.fn());
  printer.report(at(0, 0));  // the start
  clock.now += 0.5;
  printer.report(at(500, 100));
  clock.now += 0.4;
  printer.report(at(1000, 200));
  EXPECT_EQ(out.str(), "");
}

TEST(ProgressPrinter, ALogGetsALineEveryTenSecondsAndAtTheEnd) {
  FakeClock clock;
  std::ostringstream out;
  ProgressPrinter printer(out, false, clock.fn());
  clock.now += 30;  // compiling: before the simulation's start, not counted
  printer.report(at(0, 0));
  clock.now += 1.5;
  printer.report(at(100, 10));  // first line past the first second
  clock.now += 5;
  printer.report(at(200, 20));  // within ten seconds of the last: nothing
  clock.now += 5;
  printer.report(at(300, 30));  // ten seconds on
  clock.now += 1;
  printer.report(at(1000, 40));  // the end, always
  EXPECT_EQ(out.str(),
            "progress: 10% 100/1,000 instructions, 10 simulated cycles, 1.5 s elapsed, ETA 13.5 s\n"
            "progress: 30% 300/1,000 instructions, 30 simulated cycles, 11.5 s elapsed, ETA 26.8 s\n"
            "progress: 100% 1,000/1,000 instructions, 40 simulated cycles, 12.5 s elapsed\n");
}

TEST(ProgressPrinter, ATerminalGetsABarThatRedrawsAndEndsItsLine) {
  FakeClock clock;
  std::ostringstream out;
  ProgressPrinter printer(out, true, clock.fn());
  printer.report(at(0, 0));
  clock.now += 2;
  printer.report(at(500, 10));
  clock.now += 0.1;
  printer.report(at(600, 20));  // under 0.2 s since the last draw: skipped
  clock.now += 0.2;
  printer.report(at(1000, 30));
  EXPECT_EQ(out.str(),
            "\r\033[K[############............] 50% 500/1,000 instructions, 10 simulated cycles, 2.0 s elapsed, "
            "ETA 2.0 s"
            "\r\033[K[########################] 100% 1,000/1,000 instructions, 30 simulated cycles, 2.3 s elapsed\n");
}

}  // namespace
}  // namespace tpusim
