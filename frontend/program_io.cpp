#include "frontend/program_io.hpp"

#include <fstream>
#include <sstream>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>

#include "sim/common/atomic_file.hpp"
#include "sim/common/error.hpp"
#include "traces/program_format.hpp"

namespace tpusim {

namespace {

bool endsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool isTextPath(const std::string& path) {
  return endsWith(path, ".txt") || endsWith(path, ".pbtxt");
}

// Swallows parse errors: a bad file is reported as one line by readProgram.
class SilentErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, int, const std::string&) override {}
};

bool parseText(const std::string& text, program::Program& program) {
  google::protobuf::TextFormat::Parser parser;
  SilentErrors errors;
  parser.RecordErrorsTo(&errors);
  return parser.ParseFromString(text, &program);
}

}  // namespace

bool isProgramPath(const std::string& path) {
  return endsWith(path, ".tpuprog") || endsWith(path, ".program.pb") || endsWith(path, ".tpuprog.txt") ||
         endsWith(path, ".pbtxt");
}

void writeProgram(const program::Program& program, const std::string& path) {
  std::string bytes;
  if (isTextPath(path)) {
    google::protobuf::TextFormat::PrintToString(program, &bytes);
  } else {
    // Deterministic serialization: the same Program gives the same bytes.
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    program.SerializeToCodedStream(&coded);
    coded.Trim();
  }
  writeFileAtomically(path, bytes);
}

program::Program readProgram(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error(ErrorKind::kInvalidInput, "cannot open '" + path + "'");
  std::stringstream content;
  content << file.rdbuf();
  program::Program program;
  const bool parsed = isTextPath(path) ? parseText(content.str(), program) : program.ParseFromString(content.str());
  if (!parsed || program.format() != kProgramFormat) {
    throw Error(ErrorKind::kInvalidInput, path + ": not a tpusim Program file");
  }
  if (!readableProgramSchema(program.schema_version())) {
    throw Error(ErrorKind::kInvalidInput,
                path + ": Program schema version " + std::to_string(program.schema_version()) +
                    " is not supported (this tpusim reads " + std::to_string(kOldestProgramSchemaVersion) + " to " +
                    std::to_string(kProgramSchemaVersion) + ")");
  }
  return program;
}

}  // namespace tpusim
