// The spread of independent cases over processes (api/case_runner.hpp): worker processes
// return each case's bytes, in case order, as one process does; what a case throws in a
// worker comes back as an Error naming the case; ranks share the cases by index modulo.
#include <gtest/gtest.h>

#include <unistd.h>

#include <string>
#include <vector>

#include "api/case_runner.hpp"
#include "sim/common/error.hpp"
#include "tests/support/expect_error.hpp"

namespace tpusim {
namespace {

// A result that names the process that ran it, and bytes that would break a line-based
// transport: a newline, a NUL, and 100 KB (more than a pipe holds).
std::string caseResult(size_t index) {
  std::string text = "case " + std::to_string(index) + "\n";
  text.push_back('\0');
  text += std::string(100'000 + index, static_cast<char>('a' + index % 26));
  return text;
}

TEST(CaseRunner, WorkerProcessesReturnEveryCaseInOrder) {
  const CaseFunction run_case = [](size_t index) { return caseResult(index); };
  const std::optional<std::vector<std::string>> one = LocalCaseRunner(1).run(7, run_case, nullptr);
  std::vector<size_t> finished;
  const CaseFunction with_pid = [](size_t index) { return std::to_string(::getpid()) + ":" + caseResult(index); };
  const std::optional<std::vector<std::string>> three =
      LocalCaseRunner(3).run(7, with_pid, [&](size_t index, const std::string&) { finished.push_back(index); });
  ASSERT_TRUE(one && three);
  ASSERT_EQ(one->size(), 7u);
  ASSERT_EQ(three->size(), 7u);
  std::vector<std::string> worker_pids;
  for (size_t i = 0; i < 7; ++i) {
    EXPECT_EQ((*one)[i], caseResult(i));
    const size_t colon = (*three)[i].find(':');
    EXPECT_EQ((*three)[i].substr(colon + 1), caseResult(i));
    worker_pids.push_back((*three)[i].substr(0, colon));
    EXPECT_NE(worker_pids.back(), std::to_string(::getpid()));  // each ran in a worker
  }
  // Worker w takes cases w, w + 3, ...: cases 0, 3 and 6 share a process.
  EXPECT_EQ(worker_pids[0], worker_pids[3]);
  EXPECT_EQ(worker_pids[0], worker_pids[6]);
  EXPECT_NE(worker_pids[0], worker_pids[1]);
  EXPECT_EQ(finished.size(), 7u);  // told of each, in the process that started the run
}

TEST(CaseRunner, MoreJobsThanCasesAndNoCasesAreFine) {
  const CaseFunction run_case = [](size_t index) { return std::to_string(index); };
  EXPECT_EQ(*LocalCaseRunner(8).run(2, run_case, nullptr), (std::vector<std::string>{"0", "1"}));
  EXPECT_TRUE(LocalCaseRunner(4).run(0, run_case, nullptr)->empty());
}

TEST(CaseRunner, AnErrorInAWorkerIsAnErrorNamingTheCase) {
  const CaseFunction run_case = [](size_t index) -> std::string {
    if (index == 4) throw Error(ErrorKind::kUnsupported, "no such thing");
    return std::to_string(index);
  };
  testing::expectError([&] { LocalCaseRunner(2).run(6, run_case, nullptr); }, ErrorKind::kUnsupported,
                       "case 4: no such thing");
  testing::expectError([&] { LocalCaseRunner(1).run(6, run_case, nullptr); }, ErrorKind::kUnsupported, "no such thing");
}

TEST(CaseRunner, AWorkerThatDiesIsAnError) {
  const CaseFunction run_case = [](size_t index) -> std::string {
    if (index == 1) ::_exit(9);
    return std::to_string(index);
  };
  testing::expectError([&] { LocalCaseRunner(2).run(4, run_case, nullptr); }, ErrorKind::kInternal,
                       "the worker process of case 1 died");
}

TEST(CaseRunner, JobsOutOfRangeAreErrors) {
  testing::expectError([] { LocalCaseRunner runner(0); }, ErrorKind::kInvalidConfig, "--jobs must be 1 to 256 (got 0)");
  testing::expectError([] { checkJobs(257, "jobs"); }, ErrorKind::kInvalidConfig, "jobs must be 1 to 256");
}

TEST(CaseRunner, RanksTakeTheCasesByIndexModuloTheirCount) {
  EXPECT_EQ(casesOfRank(7, 0, 3), (std::vector<size_t>{0, 3, 6}));
  EXPECT_EQ(casesOfRank(7, 2, 3), (std::vector<size_t>{2, 5}));
  EXPECT_EQ(casesOfRank(2, 3, 4), (std::vector<size_t>{}));
  EXPECT_EQ(casesOfRank(3, 0, 1), (std::vector<size_t>{0, 1, 2}));
}

}  // namespace
}  // namespace tpusim
