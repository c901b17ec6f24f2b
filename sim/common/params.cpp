#include "sim/common/params.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include "configs/embedded_presets.hpp"
#include "sim/common/error.hpp"

namespace tpusim {

namespace pb = google::protobuf;

namespace {

std::string formatDouble(double value) {
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

std::vector<std::string> splitChoices(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

void collectParams(const pb::Descriptor* message, const std::string& prefix,
                   std::vector<const pb::FieldDescriptor*>& path, std::vector<ParamInfo>& out) {
  for (int i = 0; i < message->field_count(); ++i) {
    const pb::FieldDescriptor* field = message->field(i);
    path.push_back(field);
    const std::string name = prefix.empty() ? field->name() : prefix + "." + field->name();
    if (field->type() == pb::FieldDescriptor::TYPE_MESSAGE) {
      collectParams(field->message_type(), name, path, out);
    } else if (!prefix.empty()) {  // top-level name/description are labels, not parameters
      ParamInfo info;
      info.name = name;
      const pb::FieldOptions& options = field->options();
      info.unit = options.GetExtension(config::unit);
      info.doc = options.GetExtension(config::doc);
      info.positive = options.GetExtension(config::positive);
      if (options.HasExtension(config::min_value)) info.min_value = options.GetExtension(config::min_value);
      if (options.HasExtension(config::max_value)) info.max_value = options.GetExtension(config::max_value);
      info.choices = splitChoices(options.GetExtension(config::choices));
      switch (field->cpp_type()) {
        case pb::FieldDescriptor::CPPTYPE_INT64:
          info.type = ParamType::kInt;
          info.default_text = std::to_string(field->default_value_int64());
          break;
        case pb::FieldDescriptor::CPPTYPE_DOUBLE:
          info.type = ParamType::kDouble;
          info.default_text = formatDouble(field->default_value_double());
          break;
        case pb::FieldDescriptor::CPPTYPE_STRING:
          info.type = ParamType::kString;
          info.default_text = field->default_value_string();
          break;
        default: throw Error(ErrorKind::kInternal, "hardware.proto field " + name + " has an unsupported type");
      }
      info.path = path;
      out.push_back(std::move(info));
    }
    path.pop_back();
  }
}

// Collects protobuf text-format errors so that a bad preset gives one line
// with its origin, line and column.
class TextErrors : public pb::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (m_first.empty()) {
      m_first = std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + message;
    }
  }
  void AddWarning(int, int, const std::string&) override {}
  const std::string& first() const { return m_first; }

 private:
  std::string m_first;
};

const pb::Message& leafParent(const pb::Message& root, const ParamInfo& param) {
  const pb::Message* message = &root;
  for (size_t i = 0; i + 1 < param.path.size(); ++i) {
    message = &message->GetReflection()->GetMessage(*message, param.path[i]);
  }
  return *message;
}

pb::Message& mutableLeafParent(pb::Message& root, const ParamInfo& param) {
  pb::Message* message = &root;
  for (size_t i = 0; i + 1 < param.path.size(); ++i) {
    message = message->GetReflection()->MutableMessage(message, param.path[i]);
  }
  return *message;
}

}  // namespace

const char* paramTypeName(ParamType type) {
  switch (type) {
    case ParamType::kInt: return "int";
    case ParamType::kDouble: return "double";
    case ParamType::kString: return "string";
  }
  return "?";
}

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

const std::vector<ParamInfo>& HardwareParams::declarations() {
  static const std::vector<ParamInfo> kParams = [] {
    std::vector<ParamInfo> params;
    std::vector<const pb::FieldDescriptor*> path;
    collectParams(config::HardwareConfig::descriptor(), "", path, params);
    return params;
  }();
  return kParams;
}

const ParamInfo& HardwareParams::find(std::string_view name) {
  const auto& params = declarations();
  // Suggest only a near miss: a typo, not an unrelated word.
  const size_t near = std::max<size_t>(2, name.size() / 3);
  // The edit distance is at least the difference in length, so a name too long or too short
  // to be near is not compared (the comparison is quadratic in the name: a 200 KB name took seconds).
  const auto distanceTo = [&](std::string_view candidate) {
    const size_t gap = name.size() > candidate.size() ? name.size() - candidate.size() : candidate.size() - name.size();
    return gap > near ? SIZE_MAX : editDistance(name, candidate);
  };
  std::vector<const ParamInfo*> closest;  // every name at the best distance, in schema order
  size_t best = SIZE_MAX;
  for (const ParamInfo& param : params) {
    if (param.name == name) return param;
    // Compare with the full name and with the leaf, so "rows" suggests "mxu.rows".
    const std::string_view leaf = std::string_view(param.name).substr(param.name.rfind('.') + 1);
    const size_t distance = std::min(distanceTo(param.name), distanceTo(leaf));
    if (distance == SIZE_MAX) continue;
    if (distance < best) {
      best = distance;
      closest.clear();
    }
    if (distance == best) closest.push_back(&param);
  }
  std::string message = "unknown parameter '" + std::string(name) + "'";
  // A leaf two groups share ("bandwidth_gbps") suggests both.
  if (!closest.empty() && best <= near) {
    message += "; did you mean ";
    for (size_t i = 0; i < closest.size(); ++i) {
      message += (i == 0 ? "'" : i + 1 == closest.size() ? " or '" : ", '") + closest[i]->name + "'";
    }
    message += "?";
  }
  message += " (tpusim hw params lists them all)";
  throw Error(ErrorKind::kInvalidConfig, message);
}

std::vector<std::string> HardwareParams::presetNames() {
  std::vector<std::string> names;
  for (const EmbeddedPreset& preset : embeddedPresets()) names.emplace_back(preset.name);
  return names;
}

HardwareParams HardwareParams::load(const std::string& preset) {
  for (const EmbeddedPreset& embedded : embeddedPresets()) {
    if (embedded.name == preset) return parse(embedded.text, "preset " + preset);
  }
  const bool looks_like_path = preset.find('/') != std::string::npos || preset.find(".textproto") != std::string::npos;
  if (!looks_like_path) {
    std::string names;
    for (const std::string& name : presetNames()) names += (names.empty() ? "" : ", ") + name;
    throw Error(ErrorKind::kInvalidConfig, "unknown hardware preset '" + preset + "' (presets: " + names +
                                               "; or give a path to a .textproto file)");
  }
  std::ifstream file(preset);
  if (!file) throw Error(ErrorKind::kInvalidConfig, "cannot open hardware file '" + preset + "'");
  std::stringstream text;
  text << file.rdbuf();
  return parse(text.str(), preset);
}

HardwareParams HardwareParams::parse(std::string_view text, const std::string& origin) {
  config::HardwareConfig message;
  pb::TextFormat::Parser parser;
  TextErrors errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(text), &message)) {
    throw Error(ErrorKind::kInvalidConfig, origin + ":" + errors.first());
  }
  if (message.name().empty()) throw Error(ErrorKind::kInvalidConfig, origin + ": the preset has no name");
  HardwareParams params(std::move(message));
  try {
    params.validateAll();
  } catch (const Error& error) {
    throw error.within(origin);
  }
  return params;
}

void HardwareParams::set(std::string_view key, std::string_view value) {
  const ParamInfo& param = find(key);
  pb::Message& parent = mutableLeafParent(m_config, param);
  const pb::Reflection* reflection = parent.GetReflection();
  const pb::FieldDescriptor* field = param.path.back();
  const std::string text(value);
  const std::string where = "--set " + param.name + "=" + text;
  switch (param.type) {
    case ParamType::kInt: {
      int64_t parsed = 0;
      auto result = std::from_chars(text.data(), text.data() + text.size(), parsed);
      if (text.empty() || result.ec != std::errc() || result.ptr != text.data() + text.size()) {
        throw Error(ErrorKind::kInvalidConfig, where + ": expected an integer");
      }
      reflection->SetInt64(&parent, field, parsed);
      break;
    }
    case ParamType::kDouble: {
      double parsed = 0;
      auto result = std::from_chars(text.data(), text.data() + text.size(), parsed);
      if (text.empty() || result.ec != std::errc() || result.ptr != text.data() + text.size() ||
          !std::isfinite(parsed)) {
        throw Error(ErrorKind::kInvalidConfig, where + ": expected a finite number");
      }
      reflection->SetDouble(&parent, field, parsed);
      break;
    }
    case ParamType::kString: reflection->SetString(&parent, field, text); break;
  }
  try {
    validate(param);
  } catch (const Error& error) {
    throw error.within("--set");
  }
}

void HardwareParams::apply(const ParamOverrides& overrides) {
  for (const auto& [key, value] : overrides) set(key, value);
}

std::string HardwareParams::valueText(const ParamInfo& param) const {
  const pb::Message& parent = leafParent(m_config, param);
  const pb::Reflection* reflection = parent.GetReflection();
  const pb::FieldDescriptor* field = param.path.back();
  switch (param.type) {
    case ParamType::kInt: return std::to_string(reflection->GetInt64(parent, field));
    case ParamType::kDouble: return formatDouble(reflection->GetDouble(parent, field));
    case ParamType::kString: return reflection->GetString(parent, field);
  }
  return "";
}

double HardwareParams::numericValue(const ParamInfo& param) const {
  const pb::Message& parent = leafParent(m_config, param);
  const pb::Reflection* reflection = parent.GetReflection();
  const pb::FieldDescriptor* field = param.path.back();
  switch (param.type) {
    case ParamType::kInt: return static_cast<double>(reflection->GetInt64(parent, field));
    case ParamType::kDouble: return reflection->GetDouble(parent, field);
    case ParamType::kString: break;
  }
  throw Error(ErrorKind::kInternal, "parameter " + param.name + " is not numeric");
}

void HardwareParams::validate(const ParamInfo& param) const {
  if (param.type == ParamType::kString) {
    if (param.choices.empty()) return;
    const std::string value = valueText(param);
    if (std::find(param.choices.begin(), param.choices.end(), value) != param.choices.end()) return;
    std::string allowed;
    for (const std::string& choice : param.choices) allowed += (allowed.empty() ? "" : ", ") + choice;
    throw Error(ErrorKind::kInvalidConfig,
                "parameter " + param.name + " must be one of " + allowed + " (got '" + value + "')");
  }
  const double value = numericValue(param);
  const std::string unit = param.unit.empty() ? "" : " " + param.unit;
  if (param.positive && !(value > 0)) {
    throw Error(ErrorKind::kInvalidConfig,
                "parameter " + param.name + " must be > 0 (got " + valueText(param) + unit + ")");
  }
  if (param.min_value && value < *param.min_value) {
    throw Error(ErrorKind::kInvalidConfig, "parameter " + param.name + " must be >= " + formatDouble(*param.min_value) +
                                               " (got " + valueText(param) + unit + ")");
  }
  if (param.max_value && value > *param.max_value) {
    throw Error(ErrorKind::kInvalidConfig, "parameter " + param.name + " must be <= " + formatDouble(*param.max_value) +
                                               " (got " + valueText(param) + unit + ")");
  }
}

void HardwareParams::validateAll() const {
  for (const ParamInfo& param : declarations()) validate(param);
}

std::pair<std::string, std::string> parseOverride(std::string_view text) {
  const size_t equals = text.find('=');
  if (equals == std::string_view::npos || equals == 0) {
    throw Error(ErrorKind::kInvalidConfig, "--set expects key=value, got '" + std::string(text) + "'");
  }
  return {std::string(text.substr(0, equals)), std::string(text.substr(equals + 1))};
}

}  // namespace tpusim
