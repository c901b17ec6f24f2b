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
  std::string topology;
  RunRequest training;  // the training fields only
};

boost::program_options::options_description modelOptions(ModelOptions& o);

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

// `run`'s distribution options (docs/strategies.md): --strategy NAME (api/strategy.hpp),
// --workers (multi_worker_mirrored, ps), and ps's --sharding and --ps-tasks.
struct StrategyOptions {
  std::string strategy;
  std::string sharding;  // empty: the preset's ps.sharding
  int64_t ps_tasks = kBatchUnset;  // unset: the preset's ps.tasks
  int64_t workers = kBatchUnset;  // unset: none for multi_worker_mirrored, 32 for ps
};
void addStrategyOptions(boost::program_options::options_description& desc, StrategyOptions& s);
// Checks the options and writes them into `request` (--sharding and --ps-tasks as overrides of ps.*).
void applyStrategyOptions(const StrategyOptions& s, RunRequest& request);

}  // namespace tpusim::cli
