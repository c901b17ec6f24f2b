#include "report/compare_format.hpp"

#include <cstdio>
#include <sstream>

namespace tpusim {

namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kPerOpColumns[] = {"op",         "type",  "status", "sim_cycles", "sim_time_s",
                                         "ref_time_s", "ratio", "flops",  "hbm_bytes",  "ref_kernel"};
constexpr const char* kNumericsColumns[] = {"output",
                                            "op",
                                            "status",
                                            "precision",
                                            "elements",
                                            "max_abs_error",
                                            "max_rel_error",
                                            "normwise_rel_error",
                                            "nonfinite_mismatches"};

// RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled.
std::string csvField(const Json& value) {
  if (value.is_null()) return "";
  if (!value.is_string()) return value.dump();
  const std::string text = value.get<std::string>();
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char ch : text) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return quoted + "\"";
}

template <size_t N>
std::string csv(const Json& rows, const char* const (&columns)[N]) {
  std::ostringstream out;
  for (size_t i = 0; i < N; ++i) out << (i ? "," : "") << columns[i];
  out << "\n";
  for (const Json& row : rows) {
    for (size_t i = 0; i < N; ++i) out << (i ? "," : "") << csvField(row[columns[i]]);
    out << "\n";
  }
  return out.str();
}

std::string number(const Json& value, const char* format, double scale = 1.0) {
  if (value.is_null()) return "-";
  char text[64];
  std::snprintf(text, sizeof(text), format, value.get<double>() * scale);
  return text;
}

}  // namespace

std::string comparisonText(const Json& c) {
  std::ostringstream out;
  char line[512];
  const Json& sim = c["simulator"];
  const Json& ref = c["reference"];
  out << "compare      " << c["model"].get<std::string>() << "  mode " << c["mode"].get<std::string>() << "  batch "
      << c["batch"].get<int64_t>() << "\n";
  std::snprintf(line, sizeof(line), "simulator    %s: step %.3f us (%llu cycles at %.0f MHz)\n",
                sim["hw"].get<std::string>().c_str(), sim["step_time_s"].get<double>() * 1e6,
                static_cast<unsigned long long>(sim["total_cycles"].get<uint64_t>()),
                sim["clock_hz"].get<double>() / 1e6);
  out << line;
  std::snprintf(line, sizeof(line), "reference    %s (%s): step %.3f ms, per-op medians of %lld repeats\n",
                ref["backend"].get<std::string>().c_str(), ref["device"].get<std::string>().c_str(),
                ref["step_time_s"].get<double>() * 1e3,
                static_cast<long long>(ref["timing"]["repeats"].get<int64_t>()));
  out << line;
  if (ref.contains("device_libraries")) out << "libraries    " << ref["device_libraries"].get<std::string>() << "\n";
  out << "step ratio   " << number(c["step_time_ratio"], "%.1f") << " (measured / simulated)\n";
  const Json& s = c["per_op_summary"];
  std::snprintf(line, sizeof(line),
                "per op       %llu matched, %llu simulator only, %llu reference only; matched ops: ratio %s\n",
                static_cast<unsigned long long>(s["matched"].get<uint64_t>()),
                static_cast<unsigned long long>(s["simulator_only"].get<uint64_t>()),
                static_cast<unsigned long long>(s["reference_only"].get<uint64_t>()),
                number(s["matched_ratio"], "%.1f").c_str());
  out << line;
  out << "  sim cycles: what the op's busiest unit kind needs; ratio: measured / simulated time\n";
  // A CUDA reference says what ran each op (cuBLAS, cuDNN, tpusim's kernels): a last column.
  bool kernels = false;
  for (const Json& row : c["per_op"]) kernels = kernels || !row.at("ref_kernel").is_null();
  std::snprintf(line, sizeof(line), "  %-28s %-24s %-15s %10s %10s %12s %9s %12s %12s", "op", "type", "status",
                "sim cycles", "sim us", "measured us", "ratio", "flops", "hbm bytes");
  out << line << (kernels ? "  ran as\n" : "\n");
  for (const Json& row : c["per_op"]) {
    const auto integer = [](const Json& value) { return value.is_null() ? std::string("-") : value.dump(); };
    std::snprintf(line, sizeof(line), "  %-28s %-24s %-15s %10s %10s %12s %9s %12s %12s",
                  row["op"].get<std::string>().c_str(), row["type"].get<std::string>().c_str(),
                  row["status"].get<std::string>().c_str(), integer(row["sim_cycles"]).c_str(),
                  number(row["sim_time_s"], "%.3f", 1e6).c_str(), number(row["ref_time_s"], "%.1f", 1e6).c_str(),
                  number(row["ratio"], "%.1f").c_str(), integer(row["flops"]).c_str(),
                  integer(row["hbm_bytes"]).c_str());
    const Json& kernel = row.at("ref_kernel");
    out << line << (kernels ? "  " + (kernel.is_null() ? std::string("-") : kernel.get<std::string>()) : "") << "\n";
  }
  const Json& n = c["numerics"];
  if (n.is_null()) {
    out << "numerics     none: the simulation report has no functional outputs (tpusim run --functional)\n";
    return out.str();
  }
  out << "numerics     simulator: " << n["simulator"].get<std::string>() << "\n"
      << "             reference: " << n["reference"].get<std::string>() << "; seed " << n["seed"].dump() << "\n";
  std::snprintf(line, sizeof(line), "  %-24s %-20s %-15s %-9s %9s %12s %12s %12s\n", "output", "op", "status",
                "precision", "elements", "max abs err", "max rel err", "normwise");
  out << line;
  for (const Json& row : n["outputs"]) {
    const std::string elements = row["elements"].is_null() ? "-" : row["elements"].dump();
    std::snprintf(line, sizeof(line), "  %-24s %-20s %-15s %-9s %9s %12s %12s %12s%s\n",
                  row["output"].get<std::string>().c_str(), row["op"].get<std::string>().c_str(),
                  row["status"].get<std::string>().c_str(), row["precision"].get<std::string>().c_str(),
                  elements.c_str(), number(row["max_abs_error"], "%.3g").c_str(),
                  number(row["max_rel_error"], "%.3g").c_str(), number(row["normwise_rel_error"], "%.3g").c_str(),
                  row["nonfinite_mismatches"].is_number() && row["nonfinite_mismatches"].get<uint64_t>() > 0
                      ? ("  (" + row["nonfinite_mismatches"].dump() + " non-finite mismatches)").c_str()
                      : "");
    out << line;
  }
  for (const Json& group : n["by_precision"]) {
    std::snprintf(line, sizeof(line), "  %-24s %-20s %-15s %-9s %9s %12s %12s %12s\n",
                  ("all " + group["precision"].get<std::string>() + " outputs").c_str(), "",
                  (group["outputs"].dump() + " matched").c_str(), group["precision"].get<std::string>().c_str(), "-",
                  number(group["max_abs_error"], "%.3g").c_str(), number(group["max_rel_error"], "%.3g").c_str(),
                  number(group["normwise_rel_error"], "%.3g").c_str());
    out << line;
  }
  return out.str();
}

std::string perOpCsv(const Json& c) {
  return csv(c["per_op"], kPerOpColumns);
}

std::string numericsCsv(const Json& c) {
  return csv(c["numerics"].is_null() ? Json::array() : c["numerics"]["outputs"], kNumericsColumns);
}

}  // namespace tpusim
