#include "api/validation/validate.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "api/case_runner.hpp"
#include "api/validation/case_model.hpp"
#include "api/validation/measured_cases.hpp"
#include "frontend/compile.hpp"
#include "frontend/import/onnx_import.hpp"
#include "frontend/train/training_graph.hpp"
#include "sim/chip/driver.hpp"
#include "sim/common/atomic_file.hpp"
#include "sim/common/error.hpp"

namespace tpusim {

namespace {

struct Outcome {
  std::optional<double> simulated_us;
  std::string error;
};

Outcome runCase(const MeasuredCase& c, const HardwareParams& hw) {
  try {
    return {simulateCase(c, hw), ""};
  } catch (const Error& error) {
    // The importer's list of every supported op would swamp the table.
    std::string message = error.what();
    message = message.substr(0, message.find(" (supported: "));
    return {std::nullopt, std::string(errorKindName(error.kind())) + ": " + message};
  } catch (const std::exception& error) {
    return {std::nullopt, std::string("internal error: ") + error.what()};
  }
}

std::string oneLine(std::string text) {
  for (char& ch : text) {
    if (ch == '\n' || ch == '\t' || ch == '\r') ch = ' ';
  }
  return text;
}

// A worker's result line: "index <TAB> us" or "index <TAB> ! <TAB> error".
std::string resultLine(size_t index, const Outcome& outcome) {
  std::ostringstream line;
  line.precision(17);
  line << index << "\t";
  if (outcome.simulated_us) {
    line << *outcome.simulated_us;
  } else {
    line << "!\t" << oneLine(outcome.error);
  }
  line << "\n";
  return line.str();
}

void parseResultLines(const std::string& text, std::map<size_t, Outcome>& outcomes) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    const size_t index = std::stoul(line.substr(0, tab));
    const std::string rest = line.substr(tab + 1);
    if (rest.rfind("!\t", 0) == 0) {
      outcomes[index] = {std::nullopt, rest.substr(2)};
    } else {
      outcomes[index] = {std::stod(rest), ""};
    }
  }
}

// Runs `cases` over `jobs` forked workers, worker w taking every jobs-th case from w, and
// gathers their results by case index. A worker that dies leaves its unfinished cases
// with an error saying so.
std::map<size_t, Outcome> runForked(const std::vector<const MeasuredCase*>& cases, const HardwareParams& hw, int jobs) {
  struct Worker {
    pid_t pid;
    int fd;
    std::string text;
  };
  std::vector<Worker> workers;
  for (int w = 0; w < jobs; ++w) {
    int pipe_fds[2];
    if (::pipe(pipe_fds) != 0) throw Error(ErrorKind::kInternal, std::string("pipe: ") + std::strerror(errno));
    const pid_t pid = ::fork();
    if (pid < 0) throw Error(ErrorKind::kInternal, std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
      ::close(pipe_fds[0]);
      for (const Worker& other : workers) ::close(other.fd);
      for (size_t i = static_cast<size_t>(w); i < cases.size(); i += static_cast<size_t>(jobs)) {
        if (!writeAll(pipe_fds[1], resultLine(cases[i]->index, runCase(*cases[i], hw)))) ::_exit(3);
      }
      ::close(pipe_fds[1]);
      ::_exit(0);
    }
    ::close(pipe_fds[1]);
    workers.push_back({pid, pipe_fds[0], ""});
  }
  // Read every pipe as it fills, so that no worker blocks on a full one.
  size_t open = workers.size();
  while (open > 0) {
    std::vector<pollfd> polls;
    for (const Worker& worker : workers) polls.push_back({worker.fd, POLLIN, 0});
    if (::poll(polls.data(), polls.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw Error(ErrorKind::kInternal, std::string("poll: ") + std::strerror(errno));
    }
    for (size_t i = 0; i < workers.size(); ++i) {
      if (workers[i].fd < 0 || !(polls[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buffer[65536];
      const ssize_t n = ::read(workers[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        workers[i].text.append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(workers[i].fd);
        workers[i].fd = -1;
        --open;
      }
    }
  }
  std::map<size_t, Outcome> outcomes;
  for (Worker& worker : workers) {
    int status = 0;
    ::waitpid(worker.pid, &status, 0);
    parseResultLines(worker.text, outcomes);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) {
      throw Error(ErrorKind::kInternal, "interrupted");
    }
  }
  for (const MeasuredCase* c : cases) {
    if (!outcomes.count(c->index)) outcomes[c->index] = {std::nullopt, "internal error: its worker process died"};
  }
  return outcomes;
}

}  // namespace

double simulateCase(const MeasuredCase& c, const HardwareParams& hw) {
  OnnxImportOptions options;
  options.training = false;
  const ImportedModel model = importOnnxModel(caseModel(c), options);
  const ir::Graph graph = buildInferenceGraph(model);
  LowerOptions lower{caseLabel(c), "inference", static_cast<uint64_t>(model.batch)};
  const Compiled compiled = compileGraph(graph, hw, lower);
  const SimResult result = simulate(compiled.program, hw);
  return static_cast<double>(result.total_cycles) / result.clock_hz * 1e6;
}

ValidateResult validate(const ValidateRequest& request) {
  if (request.jobs < 1 || request.jobs > 256) {
    throw Error(ErrorKind::kInvalidConfig, "--jobs must be 1 to 256 (got " + std::to_string(request.jobs) + ")");
  }
  if (request.parts < 1 || request.part >= request.parts) {
    throw Error(ErrorKind::kInvalidConfig, "--part I/N needs N >= 1 and 0 <= I < N");
  }
  HardwareParams hw = HardwareParams::load(request.hw);
  hw.apply(request.overrides);
  const MeasuredCases file = readMeasuredCases(request.cases_path);
  std::set<std::string> known;
  for (const MeasuredCase& c : file.cases) known.insert(c.op);
  for (const std::string& family : request.families) {
    if (!known.count(family)) {
      std::string names;
      for (const std::string& name : known) names += (names.empty() ? "" : ", ") + name;
      throw Error(ErrorKind::kInvalidConfig, "--family " + family + ": the file has no such op (it has " + names + ")");
    }
  }
  std::vector<const MeasuredCase*> chosen;
  for (const MeasuredCase& c : file.cases) {
    const bool family = request.families.empty() ||
                        std::find(request.families.begin(), request.families.end(), c.op) != request.families.end();
    if (family && c.index % request.parts == request.part) chosen.push_back(&c);
  }
  if (chosen.empty()) throw Error(ErrorKind::kInvalidConfig, "no case of " + request.cases_path + " is selected");
  std::map<size_t, Outcome> outcomes;
  const int jobs = std::min<int>(request.jobs, static_cast<int>(chosen.size()));
  if (jobs == 1) {
    for (const MeasuredCase* c : chosen) outcomes[c->index] = runCase(*c, hw);
  } else {
    outcomes = runForked(chosen, hw, jobs);
  }
  ValidateResult result;
  result.hardware = hw.name();
  result.source = file.source;
  for (const MeasuredCase* c : chosen) {
    const Outcome& outcome = outcomes.at(c->index);
    result.cases.push_back({c->index, c->op, caseLabel(*c), c->measured_us, outcome.simulated_us, outcome.error});
  }
  result.fits = fitByFamily(result.cases);
  return result;
}

std::vector<std::string> writeValidateFiles(const ValidateResult& result, const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw Error(ErrorKind::kInvalidConfig, "cannot create '" + dir + "': " + error.message());
  const std::vector<std::pair<std::string, std::string>> files = {
      {"validate.csv", validationCsv(result.cases)},
      {"validate.json", validationJson(result.fits, result.cases, result.hardware, result.source).dump(1) + "\n"},
      {"validate.html", validationHtml(result.fits, result.cases, result.hardware, result.source)},
  };
  std::vector<std::string> names;
  for (const auto& [name, text] : files) {
    writeFileAtomically((std::filesystem::path(dir) / name).string(), text);
    names.push_back(name);
  }
  return names;
}

}  // namespace tpusim
