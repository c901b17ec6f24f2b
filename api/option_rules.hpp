// Which run options go together, in one table: each rule names an option, when a request
// gives it, and what must then hold of the others, with the one-line error when it does not
// ("--nesterov applies to the momentum optimizer only"). The API's entry points check a
// request against it before any work (runRequest, compileRequest, buildModelGraph), and
// docs/run-options.md lists it. A value on its own (a learning rate > 0) is checked where
// it is used; a combination that needs the model or the preset (--pp dividing the layers)
// is checked where those are known.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "api/session.hpp"
#include "sim/common/error.hpp"

namespace tpusim {

struct OptionRule {
  std::string option;  // the run option the rule is about (api/run_options.hpp), as its Python name
  std::string needs;   // what it needs of the others, for the docs
  std::function<bool(const RunRequest&)> given;
  std::function<bool(const RunRequest&)> holds;
  ErrorKind kind;
  std::function<std::string(const RunRequest&)> message;
};

// The rules, in the order they are checked.
const std::vector<OptionRule>& optionRules();
// Throws the error of the first rule whose option `request` gives and that does not hold.
void checkOptionRules(const RunRequest& request);
// The rules as docs/run-options.md lists them (Markdown).
std::string optionRulesMarkdown();

}  // namespace tpusim
