#include "report/csv_tables.hpp"

#include <vector>

namespace tpusim {

namespace {

std::string csvField(const nlohmann::ordered_json& value) {
  if (value.is_null()) return "";
  if (value.is_primitive() && !value.is_string()) return value.dump();  // numbers in their shortest exact form
  const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char ch : text) {
    if (ch == '"') quoted += '"';
    quoted += ch;
  }
  return quoted + "\"";
}

void appendRow(std::string& out, const std::vector<std::string>& fields) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) out += ',';
    out += fields[i];
  }
  out += '\n';
}

}  // namespace

std::string objectsCsv(const nlohmann::ordered_json& rows, const std::string& key_column) {
  std::vector<std::string> columns;
  const auto addColumn = [&](const std::string& name) {
    for (const std::string& column : columns) {
      if (column == name) return;
    }
    columns.push_back(name);
  };
  if (!key_column.empty()) columns.push_back(key_column);
  for (const auto& [key, row] : rows.items()) {
    for (const auto& [field, value] : row.items()) addColumn(field);
  }
  std::string out;
  std::vector<std::string> header;
  for (const std::string& column : columns) header.push_back(csvField(column));
  appendRow(out, header);
  for (const auto& [key, row] : rows.items()) {
    std::vector<std::string> fields;
    for (const std::string& column : columns) {
      if (!key_column.empty() && column == key_column) {
        fields.push_back(csvField(key));
      } else {
        fields.push_back(row.contains(column) ? csvField(row.at(column)) : "");
      }
    }
    appendRow(out, fields);
  }
  return out;
}

std::string reportPerOpCsv(const nlohmann::ordered_json& report) {
  return objectsCsv(report.at("per_op"));
}

std::string reportLayersCsv(const nlohmann::ordered_json& report) {
  return objectsCsv(report.at("layers"));
}

std::string reportUnitsCsv(const nlohmann::ordered_json& report) {
  return objectsCsv(report.at("units"), "unit");
}

std::string timelineCsv(const UtilizationWindows& windows, double clock_hz) {
  std::string out;
  std::vector<std::string> header = {"window", "start_cycle", "end_cycle", "start_s"};
  for (const std::string& unit : windows.units) header.push_back(csvField(unit));
  appendRow(out, header);
  for (size_t w = 0; w < windows.windows(); ++w) {
    std::vector<std::string> fields = {std::to_string(w), std::to_string(windows.windowStart(w)),
                                       std::to_string(windows.windowEnd(w)),
                                       nlohmann::json(static_cast<double>(windows.windowStart(w)) / clock_hz).dump()};
    for (size_t u = 0; u < windows.units.size(); ++u)
      fields.push_back(nlohmann::json(windows.utilization(u, w)).dump());
    appendRow(out, fields);
  }
  return out;
}

}  // namespace tpusim
