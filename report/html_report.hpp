// report.html: one self-contained page (no network: its script and styles are inline,
// written for tpusim) to look at a run (docs/reports.md): the bottleneck verdict,
// utilization over time per unit, a roofline, the per-op and per-layer tables, the
// memory summary and, when report.json has an "interconnect" section, a link heatmap.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tpusim {

// The figures the page draws, from report.json: what the page's script reads.
nlohmann::ordered_json reportPageData(const nlohmann::ordered_json& report);

std::string reportHtml(const nlohmann::ordered_json& report);

}  // namespace tpusim
