// docs/parameters.md is written by hand; this keeps it true to configs/hardware.proto and the
// presets: every parameter has a row in "All parameters" with its schema default, unit and
// description, and a row in "Preset values" with each preset's value, and no row names a
// parameter that does not exist.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "sim/common/params.hpp"

namespace tpusim {
namespace {

// The table rows under `heading` (up to the next "## "), keyed by the first cell without its
// backquotes; each row's cells trimmed.
std::map<std::string, std::vector<std::string>> tableUnder(const std::string& heading) {
  std::ifstream file(TPUSIM_SOURCE_DIR "/docs/parameters.md");
  std::map<std::string, std::vector<std::string>> rows;
  bool inside = false;
  for (std::string line; std::getline(file, line);) {
    if (line.rfind("## ", 0) == 0) inside = line == "## " + heading;
    if (!inside || line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream stream(line.substr(1));
    for (std::string cell; std::getline(stream, cell, '|');) {
      const size_t first = cell.find_first_not_of(' ');
      const size_t last = cell.find_last_not_of(' ');
      cells.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
    }
    std::string name = cells.at(0);
    if (name.size() > 2 && name.front() == '`' && name.back() == '`') name = name.substr(1, name.size() - 2);
    rows[name] = cells;
  }
  return rows;
}

TEST(ParametersDoc, EveryParameterHasItsSchemaRow) {
  const auto rows = tableUnder("All parameters");
  ASSERT_FALSE(rows.empty()) << "no 'All parameters' table in docs/parameters.md";
  std::map<std::string, bool> declared;
  for (const ParamInfo& param : HardwareParams::declarations()) {
    declared[param.name] = true;
    auto row = rows.find(param.name);
    ASSERT_NE(row, rows.end()) << param.name << " has no row in docs/parameters.md's 'All parameters'";
    const std::vector<std::string>& cells = row->second;
    ASSERT_GE(cells.size(), 6u) << param.name;
    EXPECT_EQ(cells[2], param.default_text) << param.name << ": default";
    EXPECT_EQ(cells[3], param.unit) << param.name << ": unit";
    EXPECT_EQ(cells[5], param.doc) << param.name << ": description";
  }
  for (const auto& [name, cells] : rows) EXPECT_TRUE(declared.count(name)) << name << " is not a parameter";
}

TEST(ParametersDoc, PresetValuesAreThePresets) {
  const auto rows = tableUnder("Preset values");
  const std::vector<std::string> presets = HardwareParams::presetNames();
  ASSERT_EQ(presets, (std::vector<std::string>{"tpuv4", "tpuv5e", "tpuv5p"})) << "the table's columns";
  std::vector<HardwareParams> hws;
  for (const std::string& preset : presets) hws.push_back(HardwareParams::load(preset));
  for (const ParamInfo& param : HardwareParams::declarations()) {
    auto row = rows.find(param.name);
    ASSERT_NE(row, rows.end()) << param.name << " has no row in docs/parameters.md's 'Preset values'";
    ASSERT_GE(row->second.size(), 5u) << param.name;
    for (size_t i = 0; i < hws.size(); ++i) {
      EXPECT_EQ(row->second[1 + i], hws[i].valueText(param)) << param.name << " in " << presets[i];
    }
    EXPECT_EQ(row->second[4], param.unit) << param.name << ": unit";
  }
  EXPECT_EQ(rows.size(), HardwareParams::declarations().size());
}

}  // namespace
}  // namespace tpusim
