#include "report/compare.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "report/report.hpp"
#include "sim/common/error.hpp"

namespace tpusim {

namespace {

using Json = nlohmann::ordered_json;

std::string kindOf(const Json& report) {
  const auto kind = report.find("kind");
  return kind != report.end() && kind->is_string() ? kind->get<std::string>() : "(none)";
}

const Json& field(const Json& report, const char* name, const char* which) {
  const auto found = report.find(name);
  if (found == report.end()) throw Error(ErrorKind::kInvalidInput, std::string(which) + " has no '" + name + "'");
  return *found;
}

// The simulator's numerics, from report.json's "functional" section.
std::string simulatorNumerics(const Json& functional) {
  return "mxu (" + functional.at("dataflow").get<std::string>() + " dataflow, " +
         std::to_string(functional.at("rows").get<int64_t>()) + " rows, matmul precision " +
         functional.at("matmul_precision").get<std::string>() + ")";
}

std::string referenceNumerics(const Json& ref) {
  if (ref.at("numerics") == "mxu") {
    return "mxu (as " + ref.at("hw").get<std::string>() + "'s MXUs compute, matmul precision " +
           ref.at("matmul_precision").get<std::string>() + ")";
  }
  return ref.at("numerics").get<std::string>() + " (each op's kernels in its dtype)";
}

// Op name to row index; a name twice is a malformed report.
std::map<std::string, size_t> indexByOp(const Json& rows, const char* which) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string op = rows[i].at("op").get<std::string>();
    if (!index.emplace(op, i).second) {
      throw Error(ErrorKind::kInvalidInput, std::string(which) + " lists op '" + op + "' twice in per_op");
    }
  }
  return index;
}

Json ratioOrNull(double measured, double simulated) {
  return simulated > 0 ? Json(measured / simulated) : Json();
}

struct PerOpTable {
  Json rows = Json::array();
  Json summary;
};

// The simulator's rows in its order, each with the reference's time where the
// reference ran that op, then the reference's ops the simulator does not have.
PerOpTable perOpTable(const Json& sim, const Json& ref) {
  const Json& sim_ops = field(sim, "per_op", "the simulation report");
  const Json& ref_ops = field(ref, "per_op", "the reference report");
  const std::map<std::string, size_t> ref_index = indexByOp(ref_ops, "the reference report");
  const std::map<std::string, size_t> sim_index = indexByOp(sim_ops, "the simulation report");
  const double clock_hz = field(sim, "clock_hz", "the simulation report").get<double>();
  PerOpTable table;
  uint64_t matched = 0, sim_only = 0, ref_only = 0;
  double matched_sim_s = 0, matched_ref_s = 0;
  for (const Json& op : sim_ops) {
    const std::string name = op.at("op").get<std::string>();
    // The cycles the op's busiest unit kind needs: its time had nothing overlapped it,
    // as the reference runs it (one op at a time).
    const uint64_t cycles = op.at("bound_cycles").get<uint64_t>();
    const double sim_s = static_cast<double>(cycles) / clock_hz;
    Json row;
    row["op"] = name;
    row["type"] = op.at("type");
    const auto found = ref_index.find(name);
    row["status"] = found == ref_index.end() ? "simulator only" : "matched";
    row["sim_cycles"] = cycles;
    row["sim_time_s"] = sim_s;
    if (found == ref_index.end()) {
      ++sim_only;
      row["ref_time_s"] = nullptr;
      row["ratio"] = nullptr;
    } else {
      ++matched;
      const double ref_s = ref_ops[found->second].at("time_s").get<double>();
      matched_sim_s += sim_s;
      matched_ref_s += ref_s;
      row["ref_time_s"] = ref_s;
      row["ratio"] = ratioOrNull(ref_s, sim_s);
    }
    row["flops"] = op.at("flops");
    row["hbm_bytes"] = op.at("hbm_bytes");
    row["ref_kernel"] = found == ref_index.end() ? Json() : ref_ops[found->second].value("kernel", Json());
    table.rows.push_back(row);
  }
  for (const Json& op : ref_ops) {
    if (sim_index.count(op.at("op").get<std::string>())) continue;
    ++ref_only;
    Json row;
    row["op"] = op.at("op");
    row["type"] = op.at("type");
    row["status"] = "reference only";
    row["sim_cycles"] = nullptr;
    row["sim_time_s"] = nullptr;
    row["ref_time_s"] = op.at("time_s");
    row["ratio"] = nullptr;
    row["flops"] = nullptr;
    row["hbm_bytes"] = nullptr;
    row["ref_kernel"] = op.value("kernel", Json());
    table.rows.push_back(row);
  }
  Json& s = table.summary;
  s["matched"] = matched;
  s["simulator_only"] = sim_only;
  s["reference_only"] = ref_only;
  s["matched_sim_time_s"] = matched_sim_s;
  s["matched_ref_time_s"] = matched_ref_s;
  s["matched_ratio"] = ratioOrNull(matched_ref_s, matched_sim_s);
  return table;
}

// The matched outputs grouped by precision, in the order each first appears: the
// largest of each error over the group.
Json byPrecision(const Json& rows) {
  Json groups = Json::array();
  std::map<std::string, size_t> index;
  for (const Json& row : rows) {
    if (row.at("status") != "matched") continue;
    const std::string precision = row.at("precision").get<std::string>();
    auto [it, inserted] = index.emplace(precision, groups.size());
    if (inserted) {
      groups.push_back({{"precision", precision},
                        {"outputs", 0},
                        {"max_abs_error", 0.0},
                        {"max_rel_error", 0.0},
                        {"normwise_rel_error", 0.0},
                        {"nonfinite_mismatches", 0}});
    }
    Json& group = groups[it->second];
    group["outputs"] = group["outputs"].get<uint64_t>() + 1;
    for (const char* key : {"max_abs_error", "max_rel_error", "normwise_rel_error"}) {
      group[key] = std::max(group[key].get<double>(), row.at(key).get<double>());
    }
    group["nonfinite_mismatches"] =
        group["nonfinite_mismatches"].get<uint64_t>() + row.at("nonfinite_mismatches").get<uint64_t>();
  }
  return groups;
}

}  // namespace

void checkComparable(const Json& sim, const Json& ref) {
  if (!sim.is_object() || kindOf(sim) != kSimulationReportKind) {
    throw Error(ErrorKind::kInvalidInput, "the first report has kind '" + kindOf(sim) +
                                              "', expected 'simulation' (the report.json of tpusim run)");
  }
  if (!ref.is_object() || kindOf(ref) != "reference") {
    throw Error(ErrorKind::kInvalidInput, "the second report has kind '" + kindOf(ref) +
                                              "', expected 'reference' (the report.json of tpusim reference)");
  }
  for (const char* key : {"model", "mode", "batch"}) {
    const Json& a = field(sim, key, "the simulation report");
    const Json& b = field(ref, key, "the reference report");
    if (a != b) {
      throw Error(ErrorKind::kInvalidInput, std::string("the reports are of different steps: ") + key + " " + a.dump() +
                                                " (simulation) against " + b.dump() + " (reference)");
    }
  }
  if (sim.contains("functional")) {
    const Json& a = field(sim.at("functional"), "seed", "the simulation report's functional section");
    const Json& b = field(ref, "seed", "the reference report");
    if (a != b) {
      throw Error(ErrorKind::kInvalidInput, "the reports' inputs differ: seed " + a.dump() + " (simulation) against " +
                                                b.dump() + " (reference)");
    }
    // The values of a data-parallel step depend on every replica's inputs (reports before
    // the field ran one replica).
    const Json& functional = sim.at("functional");
    const int64_t sim_replicas = functional.contains("replicas") ? functional.at("replicas").get<int64_t>() : 1;
    const int64_t ref_replicas = ref.contains("replicas") ? ref.at("replicas").get<int64_t>() : 1;
    if (sim_replicas != ref_replicas) {
      throw Error(ErrorKind::kInvalidInput,
                  "the reports' steps differ: " + std::to_string(sim_replicas) +
                      " data-parallel replica(s) (simulation) against " + std::to_string(ref_replicas) +
                      " (reference); run tpusim reference --replicas " + std::to_string(sim_replicas));
    }
  }
}

OutputErrors outputErrors(std::span<const double> sim, std::span<const double> ref) {
  OutputErrors e;
  e.elements = sim.size();
  double max_ref = 0;
  for (size_t i = 0; i < sim.size() && i < ref.size(); ++i) {
    const double a = sim[i], b = ref[i];
    if (!std::isfinite(a) || !std::isfinite(b)) {
      const bool same = (std::isnan(a) && std::isnan(b)) || a == b;
      if (!same) ++e.nonfinite_mismatches;
      continue;
    }
    const double error = std::abs(a - b);
    e.max_abs_error = std::max(e.max_abs_error, error);
    if (b != 0) e.max_rel_error = std::max(e.max_rel_error, error / std::abs(b));
    max_ref = std::max(max_ref, std::abs(b));
  }
  if (max_ref > 0) e.normwise_rel_error = e.max_abs_error / max_ref;
  return e;
}

Json numericsRow(const std::string& output, const std::string& op, const std::string& dtype,
                 const OutputErrors& errors) {
  Json row;
  row["output"] = output;
  row["op"] = op;
  row["status"] = "matched";
  row["precision"] = dtype;
  row["elements"] = errors.elements;
  row["max_abs_error"] = errors.max_abs_error;
  row["max_rel_error"] = errors.max_rel_error;
  row["normwise_rel_error"] = errors.normwise_rel_error;
  row["nonfinite_mismatches"] = errors.nonfinite_mismatches;
  return row;
}

Json numericsOneSidedRow(const std::string& output, const std::string& op, const std::string& dtype,
                         const std::string& side) {
  Json row;
  row["output"] = output;
  row["op"] = op;
  row["status"] = side;
  row["precision"] = dtype;
  for (const char* key : {"elements", "max_abs_error", "max_rel_error", "normwise_rel_error", "nonfinite_mismatches"}) {
    row[key] = nullptr;
  }
  return row;
}

Json buildComparison(const Json& sim, const Json& ref, const Json& numerics_rows) {
  checkComparable(sim, ref);
  Json c;
  c["schema_version"] = 1;
  c["kind"] = kCompareKind;
  c["model"] = sim.at("model");
  c["mode"] = sim.at("mode");
  c["batch"] = sim.at("batch");
  const double sim_step = field(sim, "step_time_s", "the simulation report").get<double>();
  const double ref_step = field(ref, "step_time_s", "the reference report").get<double>();
  c["simulator"] = {{"hw", sim.at("hw")},
                    {"clock_hz", sim.at("clock_hz")},
                    {"total_cycles", sim.at("total_cycles")},
                    {"step_time_s", sim_step}};
  c["reference"] = {{"backend", ref.at("backend")},   {"device", ref.at("device")}, {"hw", ref.at("hw")},
                    {"numerics", ref.at("numerics")}, {"timing", ref.at("timing")}, {"step_time_s", ref_step}};
  if (ref.contains("device_libraries")) c["reference"]["device_libraries"] = ref.at("device_libraries");
  c["step_time_ratio"] = ratioOrNull(ref_step, sim_step);
  PerOpTable table = perOpTable(sim, ref);
  c["per_op_summary"] = std::move(table.summary);
  c["per_op"] = std::move(table.rows);
  if (numerics_rows.is_null()) {
    c["numerics"] = nullptr;
  } else {
    c["numerics"] = {{"simulator", simulatorNumerics(sim.at("functional"))},
                     {"reference", referenceNumerics(ref)},
                     {"seed", ref.at("seed")},
                     {"by_precision", byPrecision(numerics_rows)},
                     {"outputs", numerics_rows}};
  }
  return c;
}

}  // namespace tpusim
