// The tpusim command line: parses arguments, calls the library (api/), and
// turns every Error into one line on stderr and a non-zero exit code.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include <unistd.h>

#include "apps/tpusim/commands.hpp"
#include "sim/common/atomic_file.hpp"
#include "sim/common/error.hpp"

namespace po = boost::program_options;

namespace {

constexpr const char* kUsage =
    "usage: tpusim <command> [options]\n"
    "commands:\n"
    "  run MODEL       simulate one step of MODEL (.onnx or a saved Program); write report.json and its views\n"
    "  compile MODEL   compile MODEL to a Program file (-o FILE)\n"
    "  reference MODEL run one step for real on a reference backend (--backend cpu|cuda), timed per op\n"
    "  compare SIM REF set a simulation report beside a reference report, per op and per output\n"
    "  autodistribute MODEL --topology SHAPE\n"
    "                  search data/tensor-parallel degrees, remat and precision by simulation; rank the plans\n"
    "  sweep SPEC      simulate every case of a sweep spec (models x presets x --set variations x strategies);\n"
    "                  spread over --jobs processes, or over MPI ranks under mpirun\n"
    "  validate CASES.json\n"
    "                  simulate each measured op of CASES.json and set it beside the real chip's time\n"
    "  report RUN_DIR  remake the CSVs, trace.json and report.html of a run directory from its report.json\n"
    "  hw list         list the hardware presets\n"
    "  hw show PRESET  print a preset's parameters with units and descriptions\n"
    "  hw params       list every parameter with its default\n"
    "run 'tpusim <command> --help' for its options\n";

// Ctrl-C (SIGINT) or SIGTERM: stop at once, removing an output file half written (outputs go
// to a temporary name and are renamed when whole, sim/common/atomic_file.hpp), so a run leaves
// its previous outputs or its new ones, never a truncated file. Exit 128 + the signal, as a
// shell reports a process it stopped. Only async-signal-safe calls.
extern "C" void stopOnSignal(int signal) {
  tpusim::removePendingAtomicWrite();
  const char* message = signal == SIGINT ? "tpusim: interrupted (SIGINT); no output file is left half written\n"
                                         : "tpusim: terminated (SIGTERM); no output file is left half written\n";
  const ssize_t ignored = ::write(STDERR_FILENO, message, std::strlen(message));
  (void)ignored;
  ::_exit(128 + signal);
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGINT, stopOnSignal);
  std::signal(SIGTERM, stopOnSignal);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") {
    std::cout << "tpusim " << TPUSIM_VERSION << "\n";
    return 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  try {
    if (command == "run") return tpusim::cli::runCommand(args);
    if (command == "compile") return tpusim::cli::compileCommand(args);
    if (command == "reference") return tpusim::cli::referenceCommand(args);
    if (command == "compare") return tpusim::cli::compareCommand(args);
    if (command == "autodistribute") return tpusim::cli::autodistributeCommand(args);
    if (command == "validate") return tpusim::cli::validateCommand(args);
    if (command == "sweep") return tpusim::cli::sweepCommand(args);
    if (command == "report") return tpusim::cli::reportCommand(args);
    if (command == "hw") return tpusim::cli::hwCommand(args);
    std::cerr << "tpusim: unknown command '" << command << "'\n" << kUsage;
    return 2;
  } catch (const tpusim::Error& error) {
    std::cerr << "tpusim: error: " << error.what() << "\n";
    return tpusim::exitCodeFor(error.kind());
  } catch (const po::error& error) {
    std::cerr << "tpusim " << command << ": " << error.what() << " (see tpusim " << command << " --help)\n";
    return 2;
  } catch (const std::bad_alloc&) {
    // Not a bug: this machine's memory, not the simulated one's, ran out.
    std::cerr << "tpusim: error: out of memory on this machine (the model, batch, topology or run is too large "
                 "to simulate here; try a smaller one)\n";
    return tpusim::exitCodeFor(tpusim::ErrorKind::kResource);
  } catch (const std::exception& error) {
    std::cerr << "tpusim: internal error: " << error.what() << "\n";
    return tpusim::exitCodeFor(tpusim::ErrorKind::kInternal);
  }
}
