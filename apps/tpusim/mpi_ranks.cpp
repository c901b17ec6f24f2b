#include "apps/tpusim/mpi_ranks.hpp"

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include <boost/mpi/collectives/gather.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/mpi/environment.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/utility.hpp>
#include <boost/serialization/vector.hpp>

#include "sim/common/error.hpp"

namespace tpusim::cli {

namespace {

namespace mpi = boost::mpi;

using IndexedResults = std::vector<std::pair<uint64_t, std::string>>;

// Case i on rank i % ranks, each rank's share run with `jobs` worker processes; rank 0
// gathers every rank's (index, result) pairs and puts them in index order.
class MpiCaseRunner : public CaseRunner {
 public:
  MpiCaseRunner(const mpi::communicator& world, int jobs) : m_world(world), m_jobs(checkJobs(jobs)) {}

  std::optional<std::vector<std::string>> run(size_t count, const CaseFunction& run_case,
                                              const CaseDone& done) const override {
    const std::vector<size_t> mine = casesOfRank(count, m_world.rank(), m_world.size());
    std::vector<std::string> results = runCasesHere(mine, run_case, m_jobs, done);
    IndexedResults local;
    for (size_t k = 0; k < mine.size(); ++k) local.emplace_back(mine[k], std::move(results[k]));
    if (m_world.rank() != 0) {
      mpi::gather(m_world, local, 0);
      return std::nullopt;
    }
    std::vector<IndexedResults> gathered;
    mpi::gather(m_world, local, gathered, 0);
    std::vector<std::string> ordered(count);
    std::vector<bool> seen(count, false);
    for (IndexedResults& from_rank : gathered) {
      for (auto& [index, result] : from_rank) {
        if (index >= count || seen[index]) {
          throw Error(ErrorKind::kInternal, "MPI gather: case " + std::to_string(index) + " came back twice");
        }
        ordered[index] = std::move(result);
        seen[index] = true;
      }
    }
    for (size_t i = 0; i < count; ++i) {
      if (!seen[i]) throw Error(ErrorKind::kInternal, "MPI gather: no result for case " + std::to_string(i));
    }
    return ordered;
  }

  std::string describe() const override {
    return "rank " + std::to_string(m_world.rank()) + " of " + std::to_string(m_world.size()) + " MPI ranks, " +
           std::to_string(m_jobs) + (m_jobs == 1 ? " process" : " processes") + " each";
  }

 private:
  mpi::communicator m_world;
  int m_jobs;
};

[[noreturn]] void abortAll(const mpi::communicator& world, const std::string& message, int code) {
  std::cerr << "tpusim: error (rank " << world.rank() << " of " << world.size() << "): " << message << std::endl;
  mpi::environment::abort(code);
  std::_Exit(code);  // MPI_Abort does not return; this is for the compiler
}

}  // namespace

bool launchedByMpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

}  // namespace tpusim::cli

#if defined(__SANITIZE_ADDRESS__)  // gcc
#define TPUSIM_LSAN_HOOK 1
#elif defined(__has_feature)  // clang
#if __has_feature(address_sanitizer)
#define TPUSIM_LSAN_HOOK 1
#endif
#endif

#ifdef TPUSIM_LSAN_HOOK
// LeakSanitizer asks this at exit (scripts/sanitize.sh; docs/reliability.md, "Sanitizers"): no
// leak check in a rank that mpirun started. OpenMPI keeps what MPI_Init, its progress thread and
// MPI_Finalize allocate to the end of the process; in a two-rank autodistribute every one of the
// reports was under one of the three, none under tpusim's code, which runs leak-checked without
// mpirun.
extern "C" int __lsan_is_turned_off() { return tpusim::cli::launchedByMpi() ? 1 : 0; }
#endif

namespace tpusim::cli {

int withCaseRunner(int jobs, const std::function<int(const CaseRunner& runner)>& command) {
  if (!launchedByMpi()) return command(LocalCaseRunner(jobs));
  // Not aborting on an exception of its own: the catches below report it first.
  mpi::environment environment(false);
  mpi::communicator world;
  const MpiCaseRunner runner(world, jobs);
  if (world.size() == 1) return command(runner);
  try {
    return command(runner);
  } catch (const Error& error) {
    abortAll(world, error.what(), exitCodeFor(error.kind()));
  } catch (const std::bad_alloc&) {
    abortAll(world, "out of memory on this machine", exitCodeFor(ErrorKind::kResource));
  } catch (const std::exception& error) {
    abortAll(world, std::string("internal error: ") + error.what(), exitCodeFor(ErrorKind::kInternal));
  }
}

}  // namespace tpusim::cli
