// How the independent cases of a sweep (api/sweep.hpp) or of an autodistribute search
// (api/auto_distribute.hpp) are spread over processes. A case is a function of its index
// whose result is a string (its serialized outcome), so that it crosses a process boundary
// unchanged: whichever process runs case i, the gathering process receives the same bytes,
// and what it writes does not depend on the spread.
//
// Here: this process alone, or `jobs` forked worker processes on this machine. SystemC's
// simulation context is process-wide (sc_curr_simcontext), so two simulations cannot run
// on threads of one process; each worker is a process with its own kernel. The MPI spread
// over ranks lives in the CLI (apps/tpusim/mpi_ranks.hpp), outside the library.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tpusim {

// Runs case `index` and returns its result. It should catch the errors of the case itself
// and put them in the result; one it throws ends the run (an Error with its message).
using CaseFunction = std::function<std::string(size_t index)>;
// Called as each case finishes, in the process that started the run (the results of its
// workers arrive there), in the order they finish.
using CaseDone = std::function<void(size_t index, const std::string& result)>;

inline constexpr int kMaxJobs = 256;
// `jobs` if it is 1 to kMaxJobs; otherwise an Error naming `flag`.
int checkJobs(int jobs, const std::string& flag = "--jobs");

// Runs the cases `indices` on this machine: one after another in this process when `jobs`
// is 1, otherwise over min(jobs, indices) forked worker processes, worker w taking the
// w-th, (w + jobs)-th, ... of `indices`. Returns the results in the order of `indices`.
// A worker that dies (a signal, or a case that threw) is an Error after all have ended.
std::vector<std::string> runCasesHere(const std::vector<size_t>& indices, const CaseFunction& run_case, int jobs,
                                      const CaseDone& done = nullptr);

class CaseRunner {
 public:
  virtual ~CaseRunner() = default;
  // Runs cases 0 .. count - 1. Returns their results in index order in the process that
  // gathers them, and nothing in the others (MPI ranks other than 0), which write nothing.
  virtual std::optional<std::vector<std::string>> run(size_t count, const CaseFunction& run_case,
                                                      const CaseDone& done) const = 0;
  // "1 process", "4 worker processes", "2 MPI ranks x 1 process": for logs and errors.
  virtual std::string describe() const = 0;
};

// This machine: `jobs` worker processes (1: this process alone).
class LocalCaseRunner : public CaseRunner {
 public:
  explicit LocalCaseRunner(int jobs = 1) : m_jobs(checkJobs(jobs)) {}
  std::optional<std::vector<std::string>> run(size_t count, const CaseFunction& run_case,
                                              const CaseDone& done) const override;
  std::string describe() const override;

 private:
  int m_jobs;
};

// The cases process `rank` of `processes` takes: those whose index is rank modulo processes.
std::vector<size_t> casesOfRank(size_t count, int rank, int processes);

// Writes every byte of `text` to `fd` (a worker's pipe), retrying an interrupted write;
// false when the write fails.
bool writeAll(int fd, const std::string& text);

}  // namespace tpusim
