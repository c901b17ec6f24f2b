#include "apps/tpusim/model_options.hpp"

#include <iostream>

#include "api/run_options.hpp"
#include "api/strategy.hpp"
#include "sim/common/error.hpp"
#include "sim/common/params.hpp"
#include "sim/ps/ps_config.hpp"

namespace tpusim::cli {

namespace po = boost::program_options;

namespace {

// The options of api/run_options.hpp in `scope`, grouped as --help shows them; each, when
// given, is set in `request` as it is parsed.
void addRunOptions(po::options_description& desc, RunOptionScope scope, RunRequest& request) {
  std::vector<po::options_description> groups;
  std::string group;
  for (const RunOption& option : runOptions()) {
    if (option.scope != scope) continue;
    if (groups.empty() || option.group != group) {
      group = option.group;
      groups.emplace_back(group + " options (docs/run-options.md)");
    }
    const std::string flag = runOptionFlag(option);
    std::string values;
    for (size_t i = 0; i < option.choices.size(); ++i) {
      values += (i == 0 ? "" : i + 1 == option.choices.size() ? " or " : ", ") + option.choices[i];
    }
    const std::string help =
        option.doc + (values.empty() ? "" : " (" + values + ")") +
        (option.unit.empty() ? "" : " [" + option.unit + "]") +
        (runOptionType(option) == RunOptionType::kBool ? "" : " (default " + runOptionDefault(option) + ")");
    const RunOption* target = &option;
    if (runOptionType(option) == RunOptionType::kBool) {
      groups.back().add_options()(
          flag.c_str(),
          po::value<bool>()->zero_tokens()->implicit_value(true)->notifier(
              [&request, target, flag](bool on) { setRunOption(request, *target, on, "--" + flag); }),
          help.c_str());
    } else {
      groups.back().add_options()(flag.c_str(),
                                  po::value<std::string>()->notifier([&request, target, flag](const std::string& text) {
                                    setRunOptionText(request, *target, text, "--" + flag);
                                  }),
                                  help.c_str());
    }
  }
  for (const po::options_description& group : groups) desc.add(group);
}

}  // namespace

po::options_description modelOptions(ModelOptions& o) {
  po::options_description desc("options");
  desc.add_options()("help,h", "show this help")("hw", po::value(&o.hw)->default_value(o.hw),
                                                 "hardware preset (tpusim hw list) or .textproto file")(
      "mode", po::value(&o.mode), "training (default) or inference; an HLO module runs as-written")(
      "batch", po::value(&o.batch), "batch size for a symbolic batch dimension (default 32); per chip with --topology")(
      "set", po::value(&o.sets)->composing(), "override a parameter: --set key=value (repeatable)")(
      "log-level", po::value(&o.log_level)->default_value(o.log_level),
      "trace, debug, info, warn, error, critical or off")(
      "print-ir-after", po::value(&o.training.print_ir_after)->composing(),
      "print the IR to stderr after a compiler pass (repeatable; a pass name or all)");
  addRunOptions(desc, RunOptionScope::kModel, o.training);
  return desc;
}

void addRunCommandOptions(po::options_description& desc, ModelOptions& o) {
  addRunOptions(desc, RunOptionScope::kRun, o.training);
}

bool parsePositionals(const std::vector<std::string>& args, po::options_description& desc, const std::string& usage,
                      const std::string& positional_name, int max_positionals, std::vector<std::string>* positionals) {
  po::options_description all;
  all.add(desc);
  po::positional_options_description positional;
  if (max_positionals > 0) {
    all.add_options()(positional_name.c_str(), po::value(positionals)->composing(), positional_name.c_str());
    positional.add(positional_name.c_str(), max_positionals);
  }
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
  if (vm.count("help")) {
    std::cout << usage << "\n" << desc;
    return false;
  }
  po::notify(vm);
  return true;
}

bool parse(const std::vector<std::string>& args, po::options_description& desc, const std::string& usage,
           bool wants_model, std::string* model) {
  std::vector<std::string> positionals;
  if (!parsePositionals(args, desc, usage, "model", wants_model ? 1 : 0, &positionals)) return false;
  if (wants_model) {
    if (positionals.empty()) throw Error(ErrorKind::kInvalidConfig, "missing MODEL argument (" + usage + ")");
    *model = positionals.front();
  }
  return true;
}

RunRequest toRequest(const ModelOptions& o) {
  RunRequest request = o.training;
  request.model_path = o.model;
  request.hw = o.hw;
  if (!o.mode.empty()) request.mode = o.mode;
  if (o.batch != kBatchUnset) {
    if (o.batch <= 0) throw Error(ErrorKind::kInvalidConfig, "--batch must be > 0");
    request.batch = o.batch;
  }
  for (const std::string& set : o.sets) request.overrides.push_back(parseOverride(set));
  return request;
}

void addStrategyOptions(po::options_description& desc, StrategyOptions& s) {
  po::options_description strategy("distribution (docs/strategies.md)");
  strategy.add_options()("sharding", po::value(&s.sharding),
                         "ps: round_robin, size_balanced or dynamic (default: ps.sharding)")(
      "ps-tasks", po::value(&s.ps_tasks), "ps: parameter-server tasks (default: ps.tasks)");
  desc.add(strategy);
}

void applyStrategyOptions(const StrategyOptions& s, RunRequest& request) {
  if (strategyFromName(request.strategy) != Strategy::kParameterServer) {
    if (!s.sharding.empty() || s.ps_tasks != kBatchUnset) {
      throw Error(ErrorKind::kInvalidConfig, "--sharding and --ps-tasks need --strategy ps");
    }
    return;
  }
  if (!s.sharding.empty()) {
    request.overrides.emplace_back("ps.sharding", ps::shardingPolicyName(ps::parseShardingPolicy(s.sharding)));
  }
  if (s.ps_tasks != kBatchUnset) {
    if (s.ps_tasks <= 0) throw Error(ErrorKind::kInvalidConfig, "--ps-tasks must be > 0");
    request.overrides.emplace_back("ps.tasks", std::to_string(s.ps_tasks));
  }
}

}  // namespace tpusim::cli
