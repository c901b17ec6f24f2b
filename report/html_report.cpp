#include "report/html_report.hpp"

#include <cstdio>
#include <iterator>
#include <utility>
#include <vector>

#include "report/bottleneck.hpp"
#include "report/compare.hpp"
#include "report/html_script.hpp"
#include "report/roofline.hpp"
#include "report/text_format.hpp"
#include "report/utilization_windows.hpp"
#include "sim/common/error.hpp"

namespace tpusim {

namespace {

constexpr const char* kStyle = R"CSS(
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1b1f24; max-width: 1100px; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 17px; margin-top: 28px; } h3 { font-size: 14px; }
.sub { color: #57606a; margin-top: 0; } .note { color: #57606a; font-size: 12px; }
.headline { font-weight: 600; font-size: 15px; }
#script-errors { color: #b00020; background: #fff0f0; padding: 8px; white-space: pre-wrap; }
svg text { font-size: 11px; fill: #1b1f24; } svg .tick { fill: #57606a; }
.lane { fill: #f3f4f6; } .axis, .frame { stroke: #8c959f; fill: none; } .grid { stroke: #eaeef2; }
.roof { stroke: #1b1f24; stroke-width: 2; fill: none; } .roof.vpu { stroke-dasharray: 6 4; stroke: #8c959f; }
.point.mxu { fill: #0969da; opacity: 0.75; } .point.vpu { fill: #d1770e; opacity: 0.75; }
.step { fill: #cf222e; } .bar { fill: #0969da; } .memory-over-time .bar { fill: #54aeff; } .bar.vmem { fill: #8250df; } .cell { stroke: #fff; }
.scroll { max-height: 420px; overflow: auto; border: 1px solid #d0d7de; }
table { border-collapse: collapse; font-size: 12px; } th, td { padding: 2px 8px; border-bottom: 1px solid #eaeef2; }
th { position: sticky; top: 0; background: #f6f8fa; cursor: pointer; text-align: left; } td.n { text-align: right; }
)CSS";

const char* const kPerOpColumns[] = {
    "op",           "type",       "layer",           "instructions",    "start_cycle",     "end_cycle",
    "flops",        "hbm_bytes",  "mxu_busy_cycles", "vpu_busy_cycles", "dma_busy_cycles", "bound_by",
    "bound_cycles", "bound_share"};

// Rows of `entries` with `columns` only; bound_share is the row's bound_cycles over the sum.
nlohmann::ordered_json tableRows(const nlohmann::ordered_json& entries, const nlohmann::ordered_json& columns) {
  double total = 0;
  for (const auto& entry : entries) total += static_cast<double>(entry.at("bound_cycles").get<uint64_t>());
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& entry : entries) {
    nlohmann::ordered_json row;
    for (const auto& column : columns) {
      const std::string name = column.get<std::string>();
      if (name == "bound_share") {
        row[name] = total > 0 ? static_cast<double>(entry.at("bound_cycles").get<uint64_t>()) / total : 0.0;
      } else {
        row[name] = entry.at(name);
      }
    }
    rows.push_back(row);
  }
  return rows;
}

nlohmann::ordered_json pointJson(const RooflinePoint& point) {
  return {{"op", point.op},
          {"type", point.type},
          {"kind", point.kind},
          {"flops", point.flops},
          {"hbm_bytes", point.hbm_bytes},
          {"intensity", point.intensity},
          {"flops_per_s", point.flops_per_s}};
}

// The interconnect's links (report.json "interconnect"."links"), or null without one.
nlohmann::ordered_json linkRows(const nlohmann::ordered_json& report) {
  if (!report.contains("interconnect") || !report.at("interconnect").contains("links")) return nullptr;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& link : report.at("interconnect").at("links")) {
    nlohmann::ordered_json row;
    for (const char* field : {"src", "dst", "dim", "bytes", "busy_cycles", "utilization"}) row[field] = link.at(field);
    if (link.contains("stalled_cycles")) row["stalled_cycles"] = link.at("stalled_cycles");  // not in older reports
    rows.push_back(row);
  }
  return rows;
}

const char* const kCompareColumns[] = {"op",         "type",  "status", "sim_cycles", "sim_time_s",
                                       "ref_time_s", "ratio", "flops",  "hbm_bytes",  "ref_kernel"};
const char* const kNumericsColumns[] = {"output",        "op",
                                        "status",        "precision",
                                        "elements",      "max_abs_error",
                                        "max_rel_error", "normwise_rel_error",
                                        "nonfinite_mismatches"};

template <size_t N>
nlohmann::ordered_json columnList(const char* const (&columns)[N]) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const char* column : columns) list.push_back(column);
  return list;
}

// Rows of `entries` with `columns` only; a value one side lacks is null.
template <size_t N>
nlohmann::ordered_json selectColumns(const nlohmann::ordered_json& entries, const char* const (&columns)[N]) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& entry : entries) {
    nlohmann::ordered_json row;
    for (const char* column : columns) row[column] = entry.contains(column) ? entry.at(column) : nullptr;
    rows.push_back(row);
  }
  return rows;
}

// The page's comparison figures from compare.json, which must be of this report's run.
nlohmann::ordered_json comparisonData(const nlohmann::ordered_json& report, const nlohmann::ordered_json& comparison) {
  if (!comparison.is_object() || comparison.value("kind", "") != kCompareKind)
    throw Error(ErrorKind::kInvalidInput, "the comparison is not a compare.json (tpusim compare)");
  for (const char* field : {"model", "mode", "batch"}) {
    if (comparison.at(field) != report.at(field)) {
      throw Error(ErrorKind::kInvalidInput, std::string("the comparison is of ") + field + " " +
                                                comparison.at(field).dump() + ", the report of " +
                                                report.at(field).dump());
    }
  }
  const auto& reference = comparison.at("reference");
  nlohmann::ordered_json data = {{"backend", reference.at("backend")},
                                 {"device", reference.at("device")},
                                 {"reference_numerics", reference.at("numerics")},
                                 {"timing", reference.at("timing").value("method", "timing method not recorded")},
                                 {"step_time_ratio", comparison.at("step_time_ratio")},
                                 {"summary", comparison.at("per_op_summary")},
                                 {"per_op_columns", columnList(kCompareColumns)},
                                 {"per_op", selectColumns(comparison.at("per_op"), kCompareColumns)}};
  const auto& numerics = comparison.at("numerics");
  if (numerics.is_null()) {
    data["numerics"] = nullptr;
  } else {
    data["numerics"] = {{"columns", columnList(kNumericsColumns)},
                        {"outputs", selectColumns(numerics.at("outputs"), kNumericsColumns)},
                        {"by_precision", numerics.at("by_precision")}};
  }
  return data;
}

// JSON inside <script>: '<' only occurs in strings, where \u003c means the same, so no
// op name can close the element.
std::string scriptSafe(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (char ch : json) {
    if (ch == '<') {
      out += "\\u003c";
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace

nlohmann::ordered_json reportPageData(const nlohmann::ordered_json& report, const nlohmann::ordered_json& comparison) {
  nlohmann::ordered_json data;
  for (const char* field : {"model", "hw", "mode", "batch", "total_cycles", "clock_hz", "step_time_s"}) {
    data[field] = report.at(field);
  }
  const Roofline roofline = rooflineOf(report);
  const BottleneckVerdict verdict = bottleneckVerdict(report, roofline);
  data["verdict"] = {{"busiest_unit", verdict.busiest_unit},
                     {"busiest_utilization", verdict.busiest_utilization},
                     {"hbm_bound", verdict.hbm_bound},
                     {"headline", verdict.headline},
                     {"evidence", verdict.evidence}};
  if (hasInstructionTimeline(report)) {
    const UtilizationWindows windows = utilizationWindows(report);
    nlohmann::ordered_json units = nlohmann::ordered_json::array();
    for (size_t u = 0; u < windows.units.size(); ++u) {
      nlohmann::ordered_json values = nlohmann::ordered_json::array();
      for (size_t w = 0; w < windows.windows(); ++w) values.push_back(windows.utilization(u, w));
      units.push_back({{"name", windows.units[u]}, {"utilization", values}});
    }
    data["timeline"] = {{"total_cycles", windows.total_cycles},
                        {"window_cycles", windows.window_cycles},
                        {"clock_hz", report.at("clock_hz")},
                        {"units", units}};
  } else {
    data["timeline"] = nullptr;
  }
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  for (const RooflinePoint& point : roofline.ops) points.push_back(pointJson(point));
  data["roofline"] = {{"mxu_flops_per_s", roofline.mxu_flops_per_s},
                      {"vpu_flops_per_s", roofline.vpu_flops_per_s},
                      {"hbm_bytes_per_s", roofline.hbm_bytes_per_s},
                      {"ridge", roofline.ridge},
                      {"ops", points},
                      {"step", pointJson(roofline.step)},
                      {"ops_without_hbm_bytes", roofline.ops_without_hbm_bytes},
                      {"ops_without_flops", roofline.ops_without_flops}};
  nlohmann::ordered_json op_columns = nlohmann::ordered_json::array();
  for (const char* column : kPerOpColumns) op_columns.push_back(column);
  nlohmann::ordered_json layer_columns = {"layer", "ops"};
  for (size_t i = 3; i < std::size(kPerOpColumns); ++i)
    layer_columns.push_back(kPerOpColumns[i]);  // after op, type, layer
  data["per_op_columns"] = op_columns;
  data["per_op"] = tableRows(report.at("per_op"), op_columns);
  data["layer_columns"] = layer_columns;
  data["layers"] = tableRows(report.at("layers"), layer_columns);
  data["memory"] = report.at("memory");
  data["memory_timeline"] = report.contains("memory_timeline") ? report.at("memory_timeline") : nullptr;
  data["interconnect"] = linkRows(report);
  data["compare"] = comparison.is_null() ? nullptr : comparisonData(report, comparison);
  return data;
}

std::string reportHtml(const nlohmann::ordered_json& report, const nlohmann::ordered_json& comparison) {
  const nlohmann::ordered_json data = reportPageData(report, comparison);
  const std::string title = "tpusim: " + data["model"].get<std::string>() + " on " + data["hw"].get<std::string>();
  char subtitle[256];
  std::snprintf(subtitle, sizeof(subtitle), "%s, batch %llu: %llu cycles, %.3f us at %.0f MHz",
                data["mode"].get<std::string>().c_str(), static_cast<unsigned long long>(data["batch"].get<uint64_t>()),
                static_cast<unsigned long long>(data["total_cycles"].get<uint64_t>()),
                data["step_time_s"].get<double>() * 1e6, data["clock_hz"].get<double>() / 1e6);
  std::string page;
  page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + escapeHtml(title) +
          "</title>\n<style>" + kStyle + "</style>\n</head>\n<body data-rendered=\"pending\">\n";
  page += "<h1>" + escapeHtml(title) + "</h1>\n<p class=\"sub\">" + escapeHtml(subtitle) + "</p>\n";
  page += "<pre id=\"script-errors\" hidden></pre>\n";
  page +=
      "<noscript><p>This page draws its plots with JavaScript; the same figures are in report.json and the CSV "
      "files beside it.</p></noscript>\n";
  std::vector<std::pair<const char*, const char*>> sections = {{"verdict", "Bottleneck"},
                                                          {"utilization-plot", "Utilization over time, per unit"},
                                                          {"roofline-plot", "Roofline"},
                                                          {"per-op-table", "Per op"},
                                                          {"layers-table", "Per layer"},
                                                          {"memory-plot", "Memory"},
                                                          {"interconnect-plot", "Interconnect links"}};
  if (!comparison.is_null()) {
    sections.insert(sections.end(), {{"compare-plot", "Simulated against measured, per op"},
                                     {"compare-table", "Per op: simulated and measured"},
                                     {"numerics-table", "Numerics against the reference"}});
  }
  for (const auto& [id, heading] : sections) {
    const bool table = std::string(id).find("table") != std::string::npos;
    page += "<h2>" + std::string(heading) + "</h2>\n<div id=\"" + id + "\"" + (table ? " class=\"scroll\"" : "") +
            "></div>\n";
  }
  page += "<script type=\"application/json\" id=\"report-data\">" + scriptSafe(data.dump()) + "</script>\n";
  page += "<script>" + std::string(kReportPageScript) + "</script>\n</body>\n</html>\n";
  return page;
}

}  // namespace tpusim
