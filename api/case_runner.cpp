#include "api/case_runner.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <new>

#include "sim/common/error.hpp"

namespace tpusim {

namespace {

// A worker's frame on its pipe: the case index (8 bytes), 1 for a result or 0 for an
// error (1 byte), the length (8 bytes), then the bytes: the result, or the error's kind
// as a decimal number, a tab and its message.
constexpr size_t kHeaderBytes = 17;

std::string frame(size_t index, bool ok, const std::string& body) {
  std::string out(kHeaderBytes, '\0');
  const uint64_t index64 = index, length = body.size();
  std::memcpy(out.data(), &index64, 8);
  out[8] = ok ? 1 : 0;
  std::memcpy(out.data() + 9, &length, 8);
  return out + body;
}

// The body of an error frame for what a case threw.
std::string errorBody(std::exception_ptr thrown) {
  try {
    std::rethrow_exception(thrown);
  } catch (const Error& error) {
    return std::to_string(static_cast<int>(error.kind())) + "\t" + error.what();
  } catch (const std::bad_alloc&) {
    return std::to_string(static_cast<int>(ErrorKind::kResource)) + "\tout of memory on this machine";
  } catch (const std::exception& error) {
    return std::to_string(static_cast<int>(ErrorKind::kInternal)) + "\t" + error.what();
  } catch (...) {
    return std::to_string(static_cast<int>(ErrorKind::kInternal)) + "\tunknown exception";
  }
}

Error errorOfBody(size_t index, const std::string& body) {
  const size_t tab = body.find('\t');
  const int kind = tab == std::string::npos ? static_cast<int>(ErrorKind::kInternal) : std::stoi(body.substr(0, tab));
  return Error(static_cast<ErrorKind>(kind), "case " + std::to_string(index) + ": " + body.substr(tab + 1));
}

// A worker process: runs its cases and writes a frame for each; stops at the first that
// throws. Never returns: _exit skips the parent's atexit handlers and static destructors.
[[noreturn]] void workerMain(int fd, const std::vector<size_t>& indices, size_t first, size_t stride,
                             const CaseFunction& run_case) {
  for (size_t k = first; k < indices.size(); k += stride) {
    std::string out;
    bool ok = true;
    try {
      out = frame(indices[k], true, run_case(indices[k]));
    } catch (...) {
      out = frame(indices[k], false, errorBody(std::current_exception()));
      ok = false;
    }
    if (!writeAll(fd, out)) ::_exit(3);
    if (!ok) break;
  }
  ::close(fd);
  ::_exit(0);
}

struct Worker {
  pid_t pid = -1;
  int fd = -1;
  std::string pending;  // bytes of a frame not yet complete
};

}  // namespace

bool writeAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

int checkJobs(int jobs, const std::string& flag) {
  if (jobs < 1 || jobs > kMaxJobs) {
    throw Error(ErrorKind::kInvalidConfig,
                flag + " must be 1 to " + std::to_string(kMaxJobs) + " (got " + std::to_string(jobs) + ")");
  }
  return jobs;
}

std::vector<std::string> runCasesHere(const std::vector<size_t>& indices, const CaseFunction& run_case, int jobs,
                                      const CaseDone& done) {
  checkJobs(jobs);
  std::vector<std::string> results(indices.size());
  const size_t workers_wanted = std::min(static_cast<size_t>(jobs), indices.size());
  if (workers_wanted <= 1) {
    for (size_t k = 0; k < indices.size(); ++k) {
      results[k] = run_case(indices[k]);
      if (done) done(indices[k], results[k]);
    }
    return results;
  }
  std::map<size_t, size_t> position;  // case index -> its place in `indices`
  for (size_t k = 0; k < indices.size(); ++k) position[indices[k]] = k;
  // Whatever this process buffered would otherwise be written again by each worker.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::vector<Worker> workers;
  for (size_t w = 0; w < workers_wanted; ++w) {
    int fds[2];
    if (::pipe(fds) != 0) throw Error(ErrorKind::kInternal, std::string("pipe: ") + std::strerror(errno));
    const pid_t pid = ::fork();
    if (pid < 0) throw Error(ErrorKind::kInternal, std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
      ::close(fds[0]);
      for (const Worker& other : workers) ::close(other.fd);
      workerMain(fds[1], indices, w, workers_wanted, run_case);
    }
    ::close(fds[1]);
    workers.push_back({pid, fds[0], ""});
  }
  std::vector<bool> received(indices.size(), false);
  std::optional<Error> failure;
  // Read every pipe as it fills, so that no worker blocks on a full one.
  size_t open = workers.size();
  while (open > 0) {
    std::vector<pollfd> polls;
    for (const Worker& worker : workers) polls.push_back({worker.fd, POLLIN, 0});
    if (::poll(polls.data(), polls.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw Error(ErrorKind::kInternal, std::string("poll: ") + std::strerror(errno));
    }
    for (size_t w = 0; w < workers.size(); ++w) {
      Worker& worker = workers[w];
      if (worker.fd < 0 || !(polls[w].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buffer[65536];
      const ssize_t n = ::read(worker.fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(worker.fd);
        worker.fd = -1;
        --open;
        continue;
      }
      worker.pending.append(buffer, static_cast<size_t>(n));
      while (worker.pending.size() >= kHeaderBytes) {
        uint64_t index = 0, length = 0;
        std::memcpy(&index, worker.pending.data(), 8);
        std::memcpy(&length, worker.pending.data() + 9, 8);
        if (worker.pending.size() < kHeaderBytes + length) break;
        const bool ok = worker.pending[8] != 0;
        std::string body = worker.pending.substr(kHeaderBytes, length);
        worker.pending.erase(0, kHeaderBytes + length);
        if (!ok) {
          if (!failure) failure = errorOfBody(index, body);
          continue;
        }
        const size_t k = position.at(index);
        results[k] = std::move(body);
        received[k] = true;
        if (done) done(index, results[k]);
      }
    }
  }
  std::optional<int> signal;
  for (Worker& worker : workers) {
    int status = 0;
    while (::waitpid(worker.pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status) && !signal) signal = WTERMSIG(status);
  }
  if (failure) throw *failure;
  if (signal && *signal == SIGINT) throw Error(ErrorKind::kInternal, "interrupted");
  for (size_t k = 0; k < indices.size(); ++k) {
    if (!received[k]) {
      throw Error(ErrorKind::kInternal, "the worker process of case " + std::to_string(indices[k]) + " died" +
                                            (signal ? " (signal " + std::to_string(*signal) + ")" : std::string()));
    }
  }
  return results;
}

std::vector<size_t> casesOfRank(size_t count, int rank, int processes) {
  std::vector<size_t> indices;
  for (size_t i = static_cast<size_t>(rank); i < count; i += static_cast<size_t>(processes)) indices.push_back(i);
  return indices;
}

std::optional<std::vector<std::string>> LocalCaseRunner::run(size_t count, const CaseFunction& run_case,
                                                             const CaseDone& done) const {
  return runCasesHere(casesOfRank(count, 0, 1), run_case, m_jobs, done);
}

std::string LocalCaseRunner::describe() const {
  return m_jobs == 1 ? "1 process" : std::to_string(m_jobs) + " worker processes";
}

}  // namespace tpusim
