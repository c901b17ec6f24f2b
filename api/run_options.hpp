// The run's options, declared once: each with its name, type, default, unit, choices and
// doc, and the RunRequest field it sets. The CLI's options and their --help
// (apps/tpusim/model_options.cpp), the Python keyword arguments (bindings/) and the table
// of docs/run-options.md are made from this one list, and a test holds the .pyi stub to it.
// The hardware's parameters have their own schema (configs/hardware.proto).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "api/session.hpp"

namespace tpusim {

enum class RunOptionType { kInt, kUInt, kDouble, kBool, kString };
const char* runOptionTypeName(RunOptionType type);  // "int", "uint", "float", "bool", "str"

// Where an option's value goes in the request.
using RunOptionField =
    std::variant<int64_t RunRequest::*, uint64_t RunRequest::*, int RunRequest::*, double RunRequest::*,
                 bool RunRequest::*, std::string RunRequest::*, std::optional<uint64_t> RunRequest::*>;

// Which command line takes an option: every model command (run, compile, reference), or
// `tpusim run` alone.
enum class RunOptionScope { kModel, kRun };

struct RunOption {
  std::string name;   // the Python keyword; the CLI flag is --name with '-' for '_', unless `flag` says
  std::string flag;   // the CLI flag without "--", where it differs ("lr" for learning_rate)
  std::string group;  // the --help and docs section: "training", "compiler", "parallelism", ...
  RunOptionScope scope;
  RunOptionField field;
  std::string doc;
  std::string unit;                  // "" when the value has none
  std::vector<std::string> choices;  // a string option's accepted values (its parser checks them); empty: free
  bool positive = false;             // a number that must be > 0 (checked as it is set)
  std::string shown_default;         // what --help and the docs show as the default, where not the value itself
};

// Every option, in the order of --help and the docs.
const std::vector<RunOption>& runOptions();
// The option with this Python keyword (or its CLI flag, "lr"), or nullptr.
const RunOption* findRunOption(std::string_view name);
// Its type, from its field's: an integer field is kInt, an unsigned one kUInt.
RunOptionType runOptionType(const RunOption& option);
std::string runOptionFlag(const RunOption& option);  // "lr", "micro-batches"
// The default as --help and the docs show it: shown_default, or the value of a default RunRequest.
std::string runOptionDefault(const RunOption& option);

using RunOptionValue = std::variant<int64_t, uint64_t, double, bool, std::string>;
// Sets `option` in `request`. `shown_name` ("--workers", "workers") names it in errors: a
// value out of its type's range, or not > 0 where it must be, is a one-line kInvalidConfig error.
void setRunOption(RunRequest& request, const RunOption& option, const RunOptionValue& value,
                  const std::string& shown_name);
// The same from command-line text: "abc" for a number is a one-line kInvalidConfig error.
void setRunOptionText(RunRequest& request, const RunOption& option, const std::string& text,
                      const std::string& shown_name);

// The options as docs/run-options.md tabulates them (Markdown, one table per group).
std::string runOptionsMarkdown();

}  // namespace tpusim
