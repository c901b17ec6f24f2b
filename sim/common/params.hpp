// The parameter system (docs/architecture.md, decision 5).
//
// Every parameter is declared once, as a field of configs/hardware.proto with
// its unit, default, bounds and doc in field options. This file turns that
// schema into a flat list of dotted names ("mxu.rows"), loads presets (the
// embedded ones or a .textproto file), applies `--set key=value` overrides and
// validates bounds. Components read the typed message: params.config().mxu().rows().
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "configs/hardware.pb.h"

namespace tpusim {

enum class ParamType { kInt, kDouble, kString };

struct ParamInfo {
  std::string name;  // dotted path, e.g. "hbm.bandwidth_gbps"
  ParamType type;
  std::string unit;
  std::string doc;
  std::string default_text;
  bool positive = false;
  std::optional<double> min_value;
  std::optional<double> max_value;
  std::vector<std::string> choices;  // for strings; empty = any
  // Field path from HardwareConfig to the leaf (all but the last are messages).
  std::vector<const google::protobuf::FieldDescriptor*> path;
};

const char* paramTypeName(ParamType type);

// Overrides in the order given; a later value for the same key wins.
using ParamOverrides = std::vector<std::pair<std::string, std::string>>;

class HardwareParams {
 public:
  // All parameters, in schema order.
  static const std::vector<ParamInfo>& declarations();
  // The parameter called `name`; an unknown name is an error that suggests the
  // closest declared name.
  static const ParamInfo& find(std::string_view name);

  static std::vector<std::string> presetNames();
  // `preset` is an embedded preset name, or a path to a .textproto file.
  static HardwareParams load(const std::string& preset);
  // Parses protobuf text; `origin` names the source in error messages.
  static HardwareParams parse(std::string_view text, const std::string& origin);

  // Sets one parameter from text ("256", "1.5e3", "3d_torus") and re-validates it.
  void set(std::string_view key, std::string_view value);
  void apply(const ParamOverrides& overrides);

  // The value as text, exactly as `set` would accept it.
  std::string valueText(const ParamInfo& param) const;
  double numericValue(const ParamInfo& param) const;

  const config::HardwareConfig& config() const { return m_config; }
  const std::string& name() const { return m_config.name(); }

 private:
  explicit HardwareParams(config::HardwareConfig config) : m_config(std::move(config)) {}
  void validate(const ParamInfo& param) const;
  void validateAll() const;

  config::HardwareConfig m_config;
};

// Parses "key=value" as given to --set; errors name the malformed text.
std::pair<std::string, std::string> parseOverride(std::string_view text);

// Levenshtein distance, for "did you mean" suggestions.
size_t editDistance(std::string_view a, std::string_view b);

}  // namespace tpusim
