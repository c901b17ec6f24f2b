#include "sim/common/error.hpp"

namespace tpusim {

namespace {

// Errors print as one line: embedded newlines would split the CLI's message.
std::string oneLine(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

}  // namespace

Error::Error(ErrorKind kind, const std::string& message) : std::runtime_error(oneLine(message)), m_kind(kind) {}

Error Error::within(const std::string& context) const {
  return Error(m_kind, context + ": " + what());
}

int exitCodeFor(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidInput: return 3;
    case ErrorKind::kInvalidConfig: return 2;
    case ErrorKind::kUnsupported: return 4;
    case ErrorKind::kResource: return 5;
    case ErrorKind::kNoDevice: return 6;
    case ErrorKind::kInternal: return 70;
  }
  return 70;
}

const char* errorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidInput: return "invalid input";
    case ErrorKind::kInvalidConfig: return "invalid configuration";
    case ErrorKind::kUnsupported: return "unsupported";
    case ErrorKind::kResource: return "does not fit";
    case ErrorKind::kNoDevice: return "no device";
    case ErrorKind::kInternal: return "internal error";
  }
  return "internal error";
}

}  // namespace tpusim
