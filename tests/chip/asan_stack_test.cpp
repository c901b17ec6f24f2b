// SystemC's coroutines and AddressSanitizer (sim/chip/asan_stack.hpp): after a simulation,
// whether sc_start returned or threw, exceptions thrown and caught on this thread leave no
// false stack-buffer-overflow behind, and the threads of a later simulation start on clean
// stacks. The checks are ASan's own: without AsanStackRestore around sc_start, the ASan build
// (scripts/sanitize.sh) stops in the throws below with a stack-buffer-overflow in the
// sigaltstack interceptor, as `tpusim autodistribute` did; without AsanUnmappedShadow around
// the driver's deletion of its context, with one in a std::string constructor in the last
// test's thread. Other builds pass these trivially.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <systemc>

#include "sim/chip/asan_stack.hpp"
#include "sim/chip/driver.hpp"
#include "tests/support/program_builder.hpp"
#include "tests/support/test_hardware.hpp"

namespace tpusim {
namespace {

// Frames with a std::string each (each with its redzones under ASan), all unwound by the throw
// at the bottom.
[[gnu::noinline]] size_t throwFromDepth(int depth) {
  const std::string text(40, static_cast<char>('a' + depth % 26));
  if (depth == 0) throw std::runtime_error(text);
  return throwFromDepth(depth - 1) + text.size();
}

// Deep throws, then a shallow one whose own __asan_handle_no_return runs where the deep frames
// were: with the stack's bounds wrong, the deep throws leave their redzones poisoned there.
void throwAndCatchOnThisStack() {
  for (int i = 0; i < 3; ++i) EXPECT_THROW(throwFromDepth(24), std::runtime_error);
  EXPECT_THROW(throw std::logic_error("shallow"), std::logic_error);
}

program::Program smallProgram() {
  testing::ProgramBuilder b;
  const uint32_t load = b.dma(1 << 20, true, {});
  const uint32_t mm = b.matmul(256, 256, 256, {load});
  b.dma(1 << 20, false, {mm});
  return b.program();
}

TEST(AsanStack, ThrowsAfterASimulationAreClean) {
  const SimResult result = simulate(smallProgram(), testing::oneCoreAt1GHz());
  EXPECT_GT(result.total_cycles, 0u);
  throwAndCatchOnThisStack();
}

TEST(AsanStack, ThrowsAfterASimulationInSlicesAreClean) {
  int reports = 0;
  const SimResult result =
      simulate(smallProgram(), testing::oneCoreAt1GHz(), [&](const SimProgress&) { ++reports; }, 100);
  EXPECT_GT(reports, 1);
  EXPECT_GT(result.total_cycles, 0u);
  throwAndCatchOnThisStack();
}

// Two threads, as tpusim's units are (no SC_METHOD runs on this stack): one waits for good
// (its coroutine stays suspended), the other throws on the second nanosecond through frames
// with cleanups. SystemC catches the exception on the thread's stack and sc_start throws its
// report.
struct Thrower : sc_core::sc_module {
  SC_CTOR(Thrower) {
    SC_THREAD(waitForGood);
    SC_THREAD(failLater);
  }
  void waitForGood() {
    wait(1, sc_core::SC_NS);
    wait();
  }
  void failLater() {
    wait(2, sc_core::SC_NS);
    throwFromDepth(8);
  }
};

// First a simulation through the driver: its threads stay suspended, redzones and all, on
// stacks that SystemC unmaps with the context. Then a context of our own, whose threads'
// stacks SystemC maps at those addresses, and whose sc_start throws.
TEST(AsanStack, ALaterSimulationsThreadsAndThrowsAfterSystemCThrowsAreClean) {
  EXPECT_GT(simulate(smallProgram(), testing::oneCoreAt1GHz()).total_cycles, 0u);
  auto* context = new sc_core::sc_simcontext();
  sc_core::sc_curr_simcontext = context;
  sc_core::sc_default_global_context = context;
  sc_core::sc_report_handler::set_actions(sc_core::SC_ERROR, sc_core::SC_THROW);
  {
    Thrower thrower("thrower");
    bool threw = false;
    try {
      const AsanStackRestore restore;
      sc_core::sc_start();
    } catch (const std::exception&) {
      threw = true;
    }
    EXPECT_TRUE(threw);
    throwAndCatchOnThisStack();
  }
  {
    const AsanUnmappedShadow unmapped;
    delete context;
  }
  sc_core::sc_curr_simcontext = nullptr;
  sc_core::sc_default_global_context = nullptr;
}

}  // namespace
}  // namespace tpusim
