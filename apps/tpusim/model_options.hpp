// The options every model command takes (run, compile, reference): the model,
// the preset, mode, batch, --set overrides and the training options.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "api/session.hpp"

namespace tpusim::cli {

inline constexpr int64_t kBatchUnset = std::numeric_limits<int64_t>::min();

struct ModelOptions {
  std::string model;
  std::string hw = "tpuv4";
  std::string mode;
  int64_t batch = kBatchUnset;
  std::vector<std::string> sets;
  std::string log_level = "warn";
  RunRequest training;  // the fields of the run options (api/run_options.hpp), and print_ir_after
};

// The model commands' options: the model, preset, mode, batch, --set, and the run options
// of every model command (api/run_options.hpp), which set `o.training` as they are parsed.
boost::program_options::options_description modelOptions(ModelOptions& o);
// `tpusim run`'s own run options (strategy, steps, adaptive precision, the functional run).
void addRunCommandOptions(boost::program_options::options_description& desc, ModelOptions& o);

// Parses `args`, with up to `max_positionals` positional arguments (named
// `positional_name` in errors) stored in `positionals`; returns false (after
// printing help) when --help was asked for.
bool parsePositionals(const std::vector<std::string>& args, boost::program_options::options_description& desc,
                      const std::string& usage, const std::string& positional_name, int max_positionals,
                      std::vector<std::string>* positionals);

// The same with one MODEL argument when `wants_model`.
bool parse(const std::vector<std::string>& args, boost::program_options::options_description& desc,
           const std::string& usage, bool wants_model, std::string* model);

RunRequest toRequest(const ModelOptions& o);

// `run`'s parameter-server options (docs/strategies.md), overrides of the preset's ps.*:
// --sharding and --ps-tasks (--strategy and --workers are run options).
struct StrategyOptions {
  std::string sharding;            // empty: the preset's ps.sharding
  int64_t ps_tasks = kBatchUnset;  // unset: the preset's ps.tasks
};
void addStrategyOptions(boost::program_options::options_description& desc, StrategyOptions& s);
// Checks the options against the request's strategy and writes them into it as overrides of ps.*.
void applyStrategyOptions(const StrategyOptions& s, RunRequest& request);

}  // namespace tpusim::cli
