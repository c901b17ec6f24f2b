// report.html: one self-contained page (no network: its script and styles are inline,
// written for tpusim) to look at a run (docs/reports.md): the bottleneck verdict,
// utilization over time per unit, a roofline, the per-op and per-layer tables, the
// memory summary, when report.json has an "interconnect" section a link heatmap and, when a
// comparison with a reference backend is given (compare.json, report/compare.hpp), the
// simulated-against-measured time per op and the numerics table.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tpusim {

// The figures the page draws, from report.json: what the page's script reads.
// `comparison` is compare.json of this report against a reference's, or null.
nlohmann::ordered_json reportPageData(const nlohmann::ordered_json& report,
                                      const nlohmann::ordered_json& comparison = nullptr);

std::string reportHtml(const nlohmann::ordered_json& report, const nlohmann::ordered_json& comparison = nullptr);

}  // namespace tpusim
