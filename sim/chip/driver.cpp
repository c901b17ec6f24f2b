#include "sim/chip/driver.hpp"

#include <algorithm>

#include <systemc>

#include "sim/chip/asan_stack.hpp"
#include "sim/chip/pod.hpp"
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
    {
      const AsanUnmappedShadow unmapped;  // in ASan builds, the threads' stacks (asan_stack.hpp)
      delete m_context;
    }
    sc_core::sc_curr_simcontext = nullptr;
    sc_core::sc_default_global_context = nullptr;
  }
  FreshSimContext(const FreshSimContext&) = delete;
  FreshSimContext& operator=(const FreshSimContext&) = delete;

 private:
  sc_core::sc_simcontext* m_context;
};

// The slice needs two links per dimension of size >= 2 (one each way round) on every chip.
void checkLinks(const Topology& topology, const config::HardwareConfig& hw) {
  int64_t needed = 0;
  for (int d = 0; d < kDims; ++d) needed += topology.dim(d) >= 2 ? 2 : 0;
  if (needed > hw.ici().links()) {
    throw Error(ErrorKind::kInvalidConfig, "ICI slice " + topology.shapeString() + " (" +
                                               topologyKindName(topology.kind()) + ") needs " + std::to_string(needed) +
                                               " links per chip but " + hw.name() + " has ici.links " +
                                               std::to_string(hw.ici().links()));
  }
}

// The network of all replicas: per-link counters, totals, and what the pod did.
void registerPodStats(const Pod& pod, StatsRegistry& stats) {
  stats.unit("ici", UnitKind::kNetwork);
  pod.network().registerTotals(stats, "ici");
  stats.counter("ici.collectives", "count", "collectives run over every replica (one per chip-0 ICI instruction)")
      .add(pod.collectives());
  stats.counter("ici.collective_ps", "ps", "sum over collectives of launch to last byte, in ps")
      .add(pod.collectivePs());
  stats.counter("ici.chips", "count", "chips of the ICI slice")
      .add(static_cast<uint64_t>(pod.network().topology().numChips()));
  stats
      .counter("ici.simulated_chips", "count",
               "chips whose links the network model simulated: all, or one per class of equivalent chips")
      .add(static_cast<uint64_t>(pod.network().simulated().numChips()));
  stats.counter("ici.model_bytes", "bytes", "memory the network model held at the end (transfers, events, links)")
      .add(pod.network().memoryBytes());
}

IciResult iciResultOf(const Pod& pod) {
  const SliceNetwork& network = pod.network();
  const Topology& topology = network.topology();
  IciResult ici{topology,
                network.config(),
                std::vector<LinkStats>(static_cast<size_t>(topology.numLinkSlots())),
                network.makespan(),
                pod.ocsConfig(),
                pod.ocsWiring(),
                std::nullopt,
                {},
                network.simulated(),
                network.fullReason()};
  for (LinkId link = 0; link < topology.numLinkSlots(); ++link) {
    if (topology.linkExists(link)) ici.links[static_cast<size_t>(link)] = network.linkStats(link);
  }
  if (network.hasDcn()) {
    ici.dcn = network.dcnConfig();
    for (int host = 0; host < topology.slices(); ++host) {
      ici.dcn_links.push_back(network.dcnLinkStats(host, true));
      ici.dcn_links.push_back(network.dcnLinkStats(host, false));
    }
  }
  return ici;
}

// Runs the elaborated simulation to its end: all at once, or slice by slice with a
// progress report after each. Every unit waits on events only (no free-running
// clock), so the simulation ends by starving once the last instruction retired.
// AsanStackRestore: in ASan builds, SystemC's coroutines leave ASan wrong about this stack.
void runToEnd(const Scoreboard& scoreboard, const ClockDomain& clock, const ProgressCallback& progress,
              uint64_t slice_cycles) {
  if (!progress) {
    const AsanStackRestore restore;
    sc_core::sc_start();
    return;
  }
  const sc_core::sc_time slice = clock.cycles(std::max<uint64_t>(slice_cycles, 1));
  progress({0, scoreboard.size(), 0});  // the start
  bool initialized = false;             // before the first sc_start no event is scheduled yet
  do {
    // A window with no event in it would not move time (SC_EXIT_ON_STARVATION leaves it at
    // the last event processed, so the end time is the run's), so a window reaches at least
    // the next event.
    const sc_core::sc_time window = initialized ? std::max(slice, sc_core::sc_time_to_pending_activity()) : slice;
    initialized = true;
    {
      const AsanStackRestore restore;
      sc_core::sc_start(window, sc_core::SC_EXIT_ON_STARVATION);
    }
    progress({scoreboard.retiredCount(), scoreboard.size(), clock.cyclesAt(sc_core::sc_time_stamp())});
  } while (sc_core::sc_pending_activity());
}

}  // namespace

SimResult simulate(const program::Program& program, const HardwareParams& hw, const ProgressCallback& progress,
                   uint64_t slice_cycles) {
  const config::HardwareConfig& config = hw.config();
  validateProgram(program, config);
  checkPeByPeWork(program, config);
  if (program.chips_size() != 1) {
    throw Error(ErrorKind::kUnsupported,
                "the Program has " + std::to_string(program.chips_size()) +
                    " chip programs; multi-chip runs replicate one chip's program over an ICI slice (--topology)");
  }
  const Topology topology = topologyOf(program);
  checkLinks(topology, config);

  SimResult result;
  result.stats = std::make_unique<StatsRegistry>();
  result.timeline.reserve(static_cast<size_t>(program.chips(0).instructions_size()));
  result.clock_hz = config.chip().clock_mhz() * 1e6;
  result.stats->unit("sim", UnitKind::kSimulation);
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
      Pod pod("pod", hw, topology, program.chips(0), context);
      try {
        runToEnd(pod.chip().scoreboard(), clock, progress, slice_cycles);
      } catch (const Error&) {
        throw;
      } catch (const std::exception& error) {
        throw Error(ErrorKind::kInternal, std::string("SystemC: ") + error.what());
      }
      const Scoreboard& scoreboard = pod.chip().scoreboard();
      completed = scoreboard.retiredCount() == scoreboard.size();
      total_cycles.add(clock.cyclesAt(sc_core::sc_time_stamp()));
      if (topology.numChips() > 1) {
        registerPodStats(pod, *result.stats);
        result.ici = iciResultOf(pod);
      }
    }
    if (!completed) throw Error(ErrorKind::kInternal, "simulation ended before every instruction retired");
  }
  result.total_cycles = total_cycles.value();
  return result;
}

}  // namespace tpusim
