#include "sim/chip/driver.hpp"

#include <systemc>

#include "sim/chip/chip.hpp"
#include "sim/chip/program_check.hpp"
#include "sim/common/error.hpp"

namespace tpusim {

namespace {

// SystemC elaborates once per context; a fresh context per run lets a process
// run many simulations. Modules must be destroyed before the context.
class FreshSimContext {
 public:
  FreshSimContext() : m_context(new sc_core::sc_simcontext()) {
    sc_core::sc_curr_simcontext = m_context;
    sc_core::sc_default_global_context = m_context;
  }
  ~FreshSimContext() {
    delete m_context;
    sc_core::sc_curr_simcontext = nullptr;
    sc_core::sc_default_global_context = nullptr;
  }
  FreshSimContext(const FreshSimContext&) = delete;
  FreshSimContext& operator=(const FreshSimContext&) = delete;

 private:
  sc_core::sc_simcontext* m_context;
};

}  // namespace

SimResult simulate(const program::Program& program, const HardwareParams& hw) {
  const config::HardwareConfig& config = hw.config();
  validateProgram(program, config);
  if (program.chips_size() != 1) {
    throw Error(ErrorKind::kUnsupported,
                "the Program has " + std::to_string(program.chips_size()) +
                    " chips; multi-chip simulation needs the interconnect model, which is not built yet");
  }

  SimResult result;
  result.stats = std::make_unique<StatsRegistry>();
  result.clock_hz = config.chip().clock_mhz() * 1e6;
  Counter& total_cycles = result.stats->counter("sim.total_cycles", "cycles",
                                                "cycles from the first instruction issued to the last retired");
  {
    FreshSimContext context_guard;
    sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
    const ClockDomain clock(result.clock_hz);
    UnitContext context{&clock,
                        nullptr,
                        result.stats.get(),
                        &result.timeline,
                        &total_cycles,
                        0,
                        static_cast<size_t>(config.core().issue_queue_depth())};
    bool completed = false;
    {
      Chip chip("chip0", config, program.chips(0), context);
      try {
        sc_core::sc_start();
      } catch (const Error&) {
        throw;
      } catch (const std::exception& error) {
        throw Error(ErrorKind::kInternal, std::string("SystemC: ") + error.what());
      }
      completed = chip.scoreboard().retiredCount() == chip.scoreboard().size();
      total_cycles.add(clock.cyclesAt(sc_core::sc_time_stamp()));
    }
    if (!completed) throw Error(ErrorKind::kInternal, "simulation ended before every instruction retired");
  }
  result.total_cycles = total_cycles.value();
  return result;
}

}  // namespace tpusim
