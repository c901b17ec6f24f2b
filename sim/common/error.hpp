// The one exception type of tpusim (docs/architecture.md, decision 7).
// An Error carries a kind, which the CLI maps to an exit code, and a message
// that reads as one line with its context prepended: "loading preset x: ...".
#pragma once

#include <stdexcept>
#include <string>

namespace tpusim {

enum class ErrorKind {
  kInvalidInput,   // a model, trace or program file that cannot be used
  kInvalidConfig,  // a preset, parameter or option value that cannot be used
  kUnsupported,    // valid input that tpusim does not handle yet
  kResource,       // the workload does not fit the simulated machine
  kNoDevice,       // the hardware a backend runs on is not present (no CUDA GPU)
  kInternal,       // a bug in tpusim
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message);

  ErrorKind kind() const { return m_kind; }

  // Returns a copy whose message is "context: <this message>".
  Error within(const std::string& context) const;

 private:
  ErrorKind m_kind;
};

// Process exit code for an error kind: distinct per kind, never 0.
int exitCodeFor(ErrorKind kind);

const char* errorKindName(ErrorKind kind);

}  // namespace tpusim
