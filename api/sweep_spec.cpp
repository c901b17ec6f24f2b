#include "api/sweep_spec.hpp"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/run_options.hpp"
#include "api/strategy.hpp"
#include "frontend/train/precision_policy.hpp"
#include "frontend/train/training_graph.hpp"
#include "sim/common/error.hpp"
#include "sim/common/params.hpp"
#include "sim/pipeline/pipeline_schedule.hpp"

namespace tpusim {

namespace pb = google::protobuf;

namespace {

// Keeps the first text-format error, with its line and column.
class FirstError : public pb::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (m_first.empty()) m_first = std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + message;
  }
  void AddWarning(int, int, const std::string&) override {}
  const std::string& first() const { return m_first; }

 private:
  std::string m_first;
};

Error specError(const std::string& message) {
  return Error(ErrorKind::kInvalidConfig, "sweep spec: " + message);
}

// A relative path taken from `base_dir`; an absolute one, or any with no base, as it is.
std::string resolved(const std::string& path, const std::string& base_dir) {
  const std::filesystem::path p(path);
  if (base_dir.empty() || p.is_absolute()) return path;
  return (std::filesystem::path(base_dir) / p).lexically_normal().string();
}

bool isPresetFile(const std::string& preset) {
  return preset.size() > 10 && preset.compare(preset.size() - 10, 10, ".textproto") == 0;
}

template <typename T, typename Key>
void checkNoRepeats(const std::string& field, const std::vector<T>& items, const Key& key) {
  for (size_t i = 0; i < items.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (key(items[i]) == key(items[j])) throw specError(field + " lists " + key(items[i]) + " twice");
    }
  }
}

std::string joined(const std::vector<std::string>& parts, const std::string& separator) {
  std::string text;
  for (const std::string& part : parts) {
    if (!text.empty()) text += separator;
    text += part;
  }
  return text;
}

void checkStrategy(const config::SweepStrategy& s, size_t i) {
  const std::string where = "strategy " + std::to_string(i) + " (" + strategyLabel(s) + "): ";
  if (s.has_dp() && s.dp() < 1) throw specError(where + "dp must be >= 1");
  if (s.has_tp() && s.tp() < 1) throw specError(where + "tp must be >= 1");
  if (s.has_pp() && s.pp() < 1) throw specError(where + "pp must be >= 1");
  if (s.has_micro_batches() && s.micro_batches() < 1) throw specError(where + "micro_batches must be >= 1");
  if (s.has_workers() && s.workers() < 1) throw specError(where + "workers must be >= 1");
  try {
    if (s.has_pipeline_schedule()) pipelineScheduleFromName(s.pipeline_schedule());
    strategyFromName(s.strategy());
  } catch (const Error& error) {
    throw specError(where + error.what());
  }
  if ((s.has_dp() || s.has_tp() || s.has_pp()) && s.topology().empty()) {
    throw specError(where + "dp, tp and pp need a topology");
  }
}

// Sets in `request` the run options (api/run_options.hpp) that `message` gives: its fields
// are named as the options, except those listed in `not_options`.
void applyRunOptions(const google::protobuf::Message& message, const std::vector<std::string>& not_options,
                     RunRequest& request) {
  const google::protobuf::Reflection* reflection = message.GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const google::protobuf::FieldDescriptor* field : fields) {
    if (std::find(not_options.begin(), not_options.end(), field->name()) != not_options.end()) continue;
    const RunOption* option = findRunOption(field->name());
    if (option == nullptr) throw Error(ErrorKind::kInternal, "sweep spec field " + field->name() + " is no run option");
    if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_INT64) {
      setRunOption(request, *option, reflection->GetInt64(message, field), field->name());
    } else if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_STRING) {
      setRunOption(request, *option, reflection->GetString(message, field), field->name());
    } else {
      throw Error(ErrorKind::kInternal, "sweep spec field " + field->name() + " has a type no run option has");
    }
  }
}

RunRequest caseRequest(const config::SweepSpec& spec, const std::string& model_path, const std::string& hw,
                       const ParamOverrides& overrides, const config::SweepStrategy& s) {
  RunRequest request;
  request.model_path = model_path;
  request.hw = hw;
  request.overrides = overrides;
  if (spec.has_mode()) request.mode = spec.mode();
  if (spec.has_batch()) request.batch = spec.batch();
  applyRunOptions(spec, {"model", "preset", "variation", "strategy", "mode", "batch"}, request);
  applyRunOptions(s, {}, request);
  // The summary reads the totals; a sweep's report keeps no per-instruction list.
  request.instruction_timeline = false;
  return request;
}

}  // namespace

config::SweepSpec parseSweepSpec(std::string_view text, const std::string& origin) {
  config::SweepSpec spec;
  pb::TextFormat::Parser parser;
  FirstError errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(text), &spec)) {
    throw Error(ErrorKind::kInvalidConfig, origin + ":" + errors.first());
  }
  return spec;
}

config::SweepSpec readSweepSpec(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw Error(ErrorKind::kInvalidInput, "cannot open sweep spec '" + path + "'");
  std::stringstream text;
  text << file.rdbuf();
  return parseSweepSpec(text.str(), path);
}

config::SweepSpec sweepSpecFromJson(const std::string& json) {
  config::SweepSpec spec;
  pb::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = pb::util::JsonStringToMessage(json, &spec, options);
  if (!status.ok()) throw specError(std::string(status.message()));
  return spec;
}

std::string strategyLabel(const config::SweepStrategy& s) {
  std::vector<std::string> parts;
  if (s.has_strategy()) parts.push_back("strategy=" + s.strategy());
  if (s.has_topology()) parts.push_back("topology=" + s.topology());
  if (s.has_dp()) parts.push_back("dp=" + std::to_string(s.dp()));
  if (s.has_tp()) parts.push_back("tp=" + std::to_string(s.tp()));
  if (s.has_pp()) parts.push_back("pp=" + std::to_string(s.pp()));
  if (s.has_micro_batches()) parts.push_back("micro_batches=" + std::to_string(s.micro_batches()));
  if (s.has_pipeline_schedule()) parts.push_back("pipeline_schedule=" + s.pipeline_schedule());
  if (s.has_workers()) parts.push_back("workers=" + std::to_string(s.workers()));
  return parts.empty() ? "one chip" : joined(parts, " ");
}

std::string SweepCase::label() const {
  return model + " " + preset + " " + (sets.empty() ? "preset" : joined(sets, ",")) + " " + strategy;
}

std::vector<SweepCase> sweepCases(const config::SweepSpec& spec, const std::string& base_dir) {
  const std::vector<std::string> models(spec.model().begin(), spec.model().end());
  if (models.empty()) throw specError("no model: name at least one (model: \"traces/mlp.onnx\")");
  checkNoRepeats("model", models, [](const std::string& m) { return m; });
  for (const std::string& model : models) {
    if (!std::filesystem::is_regular_file(resolved(model, base_dir))) {
      throw Error(ErrorKind::kInvalidInput, "sweep spec: model file '" + resolved(model, base_dir) +
                                                "' does not exist" +
                                                (base_dir.empty() ? "" : " (paths are from the spec's folder)"));
    }
  }
  std::vector<std::string> presets(spec.preset().begin(), spec.preset().end());
  if (presets.empty()) presets.push_back("tpuv4");
  checkNoRepeats("preset", presets, [](const std::string& p) { return p; });
  std::vector<std::vector<std::string>> variations;
  for (const config::SweepVariation& v : spec.variation()) variations.emplace_back(v.set().begin(), v.set().end());
  if (variations.empty()) variations.emplace_back();
  checkNoRepeats("variation", variations,
                 [](const std::vector<std::string>& v) { return std::string("{").append(joined(v, ",")).append("}"); });
  std::vector<config::SweepStrategy> strategies(spec.strategy().begin(), spec.strategy().end());
  if (strategies.empty()) strategies.emplace_back();
  checkNoRepeats("strategy", strategies,
                 [](const config::SweepStrategy& s) { return std::string("{").append(strategyLabel(s)).append("}"); });
  for (size_t i = 0; i < strategies.size(); ++i) checkStrategy(strategies[i], i);
  if (spec.has_mode() && spec.mode() != "training" && spec.mode() != "inference") {
    throw specError("mode must be training or inference, not '" + spec.mode() + "'");
  }
  if (spec.has_batch() && spec.batch() <= 0) throw specError("batch must be > 0");
  try {
    if (spec.has_precision()) parsePrecisionPolicy(spec.precision());
    if (spec.has_optimizer()) parseOptimizer(spec.optimizer());
  } catch (const Error& error) {
    throw specError(error.what());
  }

  // Every preset loads and takes every variation, before anything runs.
  std::vector<std::string> hw_of_preset;
  std::vector<ParamOverrides> overrides_of_variation(variations.size());
  for (size_t v = 0; v < variations.size(); ++v) {
    for (const std::string& set : variations[v]) {
      try {
        overrides_of_variation[v].push_back(parseOverride(set));
      } catch (const Error& error) {
        throw specError("variation " + std::to_string(v) + ": " + error.what());
      }
    }
  }
  for (const std::string& preset : presets) {
    const std::string hw = isPresetFile(preset) ? resolved(preset, base_dir) : preset;
    HardwareParams params = [&] {
      try {
        return HardwareParams::load(hw);
      } catch (const Error& error) {
        throw specError("preset " + preset + ": " + error.what());
      }
    }();
    for (size_t v = 0; v < variations.size(); ++v) {
      try {
        HardwareParams varied = params;
        varied.apply(overrides_of_variation[v]);
      } catch (const Error& error) {
        throw specError("variation " + std::to_string(v) + " on preset " + preset + ": " + error.what());
      }
    }
    hw_of_preset.push_back(hw);
  }

  std::vector<SweepCase> cases;
  for (const std::string& model : models) {
    for (size_t p = 0; p < presets.size(); ++p) {
      for (size_t v = 0; v < variations.size(); ++v) {
        for (const config::SweepStrategy& strategy : strategies) {
          SweepCase c;
          c.index = cases.size();
          c.model = model;
          c.preset = presets[p];
          c.sets = variations[v];
          c.strategy = strategyLabel(strategy);
          c.request =
              caseRequest(spec, resolved(model, base_dir), hw_of_preset[p], overrides_of_variation[v], strategy);
          cases.push_back(std::move(c));
        }
      }
    }
  }
  return cases;
}

}  // namespace tpusim
