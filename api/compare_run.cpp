#include "api/compare_run.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "api/npy.hpp"
#include "report/compare.hpp"
#include "sim/common/error.hpp"

namespace tpusim {

namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

// An output tensor a report describes: its entry and the folder its file is relative to.
struct Output {
  const Json* entry;
  fs::path folder;
};

ir::TensorValue loadOutput(const Output& output, const char* side) {
  const std::string name = output.entry->at("name").get<std::string>();
  ir::TensorValue value;
  try {
    value = readNpy((output.folder / output.entry->at("file").get<std::string>()).string());
  } catch (const Error& error) {
    throw error.within(std::string(side) + " output '" + name + "'");
  }
  if (Json(value.shape) != output.entry->at("shape")) {
    throw Error(ErrorKind::kInvalidInput, std::string(side) + " output '" + name + "': the file's shape " +
                                              Json(value.shape).dump() + " is not the report's " +
                                              output.entry->at("shape").dump());
  }
  return value;
}

std::vector<double> asDoubles(const ir::TensorValue& value) {
  if (ir::TensorValue::isFloating(value.dtype)) return value.floats;
  return {value.ints.begin(), value.ints.end()};
}

// One row per output: the simulator's in its order, then the reference's it lacks.
Json numericsRows(const Json& sim, const fs::path& sim_dir, const Json& ref, const fs::path& ref_dir) {
  std::map<std::string, Output> ref_outputs;
  for (const Json& entry : ref.at("outputs"))
    ref_outputs.emplace(entry.at("name").get<std::string>(), Output{&entry, ref_dir});
  Json rows = Json::array();
  std::set<std::string> in_sim;
  for (const Json& entry : sim.at("functional").at("outputs")) {
    const std::string name = entry.at("name").get<std::string>();
    in_sim.insert(name);
    const auto found = ref_outputs.find(name);
    if (found == ref_outputs.end()) {
      rows.push_back(numericsOneSidedRow(name, "", entry.at("dtype").get<std::string>(), "simulator only"));
      continue;
    }
    const Json& ref_entry = *found->second.entry;
    if (entry.at("shape") != ref_entry.at("shape")) {
      throw Error(ErrorKind::kInvalidInput, "output '" + name + "' has shape " + entry.at("shape").dump() +
                                                " in the simulation and " + ref_entry.at("shape").dump() +
                                                " in the reference");
    }
    const std::vector<double> a = asDoubles(loadOutput(Output{&entry, sim_dir}, "simulation"));
    const std::vector<double> b = asDoubles(loadOutput(found->second, "reference"));
    rows.push_back(numericsRow(name, ref_entry.at("op").get<std::string>(), entry.at("dtype").get<std::string>(),
                               outputErrors(a, b)));
  }
  for (const Json& entry : ref.at("outputs")) {
    const std::string name = entry.at("name").get<std::string>();
    if (in_sim.count(name)) continue;
    rows.push_back(numericsOneSidedRow(name, entry.at("op").get<std::string>(), entry.at("dtype").get<std::string>(),
                                       "reference only"));
  }
  return rows;
}

}  // namespace

nlohmann::ordered_json readReportJson(const std::string& path) {
  if (!fs::is_regular_file(path)) throw Error(ErrorKind::kInvalidInput, "report '" + path + "' does not exist");
  std::ifstream file(path);
  try {
    return Json::parse(file);
  } catch (const nlohmann::json::exception& error) {  // parse_error, or out_of_range for a number like 1e400
    throw Error(ErrorKind::kInvalidInput, "report '" + path + "' is not valid JSON (" + error.what() + ")");
  }
}

Json compareReportFiles(const std::string& sim_report, const std::string& ref_report) {
  const Json sim = readReportJson(sim_report);
  const Json ref = readReportJson(ref_report);
  try {
    checkComparable(sim, ref);
    const Json rows = sim.contains("functional") ? numericsRows(sim, fs::path(sim_report).parent_path(), ref,
                                                                fs::path(ref_report).parent_path())
                                                 : Json();
    return buildComparison(sim, ref, rows);
  } catch (const nlohmann::json::exception& error) {
    // A field missing or of the wrong type: a report not written by this tpusim.
    throw Error(ErrorKind::kInvalidInput, "the reports '" + sim_report + "' and '" + ref_report +
                                              "' lack a field compare needs (" + error.what() + ")");
  }
}

}  // namespace tpusim
