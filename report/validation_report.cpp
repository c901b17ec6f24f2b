#include "report/validation_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "report/text_format.hpp"

namespace tpusim {

namespace {

double errorOf(const ValidationCase& c) { return std::abs(*c.simulated_us / c.measured_us - 1); }

// The value at rank ceil(q n) of the sorted values (nearest rank).
double nearestRank(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::max<size_t>(rank, 1) - 1];
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

FamilyFit fitOf(const std::string& family, const std::vector<const ValidationCase*>& cases) {
  FamilyFit fit;
  fit.family = family;
  fit.cases = cases.size();
  std::vector<double> errors, ratios;
  double worst = -1;
  for (const ValidationCase* c : cases) {
    if (!c->simulated_us) continue;
    const double error = errorOf(*c);
    errors.push_back(error);
    ratios.push_back(*c->simulated_us / c->measured_us);
    if (error > worst) {
      worst = error;
      fit.worst = c->index;
      fit.worst_ratio = ratios.back();
      fit.worst_label = c->label;
    }
  }
  fit.ran = errors.size();
  if (errors.empty()) return fit;
  fit.median_error = median(errors);
  fit.p90_error = nearestRank(errors, 0.9);
  fit.median_ratio = median(ratios);
  const auto share = [&](double limit) {
    return static_cast<double>(std::count_if(errors.begin(), errors.end(), [&](double e) { return e <= limit; })) /
           static_cast<double>(errors.size());
  };
  fit.within_10 = share(0.10);
  fit.within_25 = share(0.25);
  return fit;
}

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

std::string percent(double share) { return format("%.1f%%", 100 * share); }

std::string csvField(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char ch : text) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

// A log-log plot of one family's cases: simulated (y) against measured (x), with y = x.
std::string familyPlot(const std::string& family, const std::vector<const ValidationCase*>& cases) {
  double low = 1e300, high = 0;
  for (const ValidationCase* c : cases) {
    if (!c->simulated_us) continue;
    low = std::min({low, c->measured_us, *c->simulated_us});
    high = std::max({high, c->measured_us, *c->simulated_us});
  }
  if (high <= 0) return "<p>No case of " + escapeHtml(family) + " ran.</p>\n";
  const double lo = std::floor(std::log10(low)), hi = std::max(lo + 1, std::ceil(std::log10(high)));
  const double size = 360, margin = 48;
  const auto at = [&](double us) { return (std::log10(us) - lo) / (hi - lo) * (size - 2 * margin) + margin; };
  std::ostringstream svg;
  svg << "<figure><figcaption>" << escapeHtml(family) << "</figcaption>\n<svg width=\"" << size << "\" height=\""
      << size << "\" viewBox=\"0 0 " << size << " " << size << "\" role=\"img\" aria-label=\"" << escapeHtml(family)
      << ": simulated against measured microseconds, log-log\">\n";
  svg << "<rect x=\"" << margin << "\" y=\"" << margin << "\" width=\"" << size - 2 * margin << "\" height=\""
      << size - 2 * margin << "\" fill=\"none\" stroke=\"#999\"/>\n";
  for (double decade = lo; decade <= hi; ++decade) {
    const double p = (decade - lo) / (hi - lo) * (size - 2 * margin) + margin;
    const std::string label = format("%g", std::pow(10.0, decade));
    svg << "<text x=\"" << p << "\" y=\"" << size - margin + 16 << "\" font-size=\"10\" text-anchor=\"middle\">"
        << label << "</text><text x=\"" << margin - 4 << "\" y=\"" << size - p + 3
        << "\" font-size=\"10\" text-anchor=\"end\">" << label << "</text>\n";
  }
  svg << "<line x1=\"" << margin << "\" y1=\"" << size - margin << "\" x2=\"" << size - margin << "\" y2=\"" << margin
      << "\" stroke=\"#c33\" stroke-dasharray=\"4 3\"/>\n";
  for (const ValidationCase* c : cases) {
    if (!c->simulated_us) continue;
    svg << "<circle cx=\"" << format("%.1f", at(c->measured_us)) << "\" cy=\""
        << format("%.1f", size - at(*c->simulated_us)) << "\" r=\"2\" fill=\"#2a6fb0\" fill-opacity=\"0.6\"><title>"
        << escapeHtml(c->label) << ": measured " << format("%.4g", c->measured_us) << " us, simulated "
        << format("%.4g", *c->simulated_us) << " us</title></circle>\n";
  }
  svg << "<text x=\"" << size / 2 << "\" y=\"" << size - 8 << "\" font-size=\"11\" text-anchor=\"middle\">measured "
      << "us</text><text x=\"12\" y=\"" << size / 2 << "\" font-size=\"11\" text-anchor=\"middle\" transform=\"rotate(-90 12 "
      << size / 2 << ")\">simulated us</text>\n</svg></figure>\n";
  return svg.str();
}

std::map<std::string, std::vector<const ValidationCase*>> byFamily(const std::vector<ValidationCase>& cases) {
  std::map<std::string, std::vector<const ValidationCase*>> families;
  for (const ValidationCase& c : cases) families[c.family].push_back(&c);
  return families;
}

}  // namespace

std::vector<FamilyFit> fitByFamily(const std::vector<ValidationCase>& cases) {
  std::vector<std::string> order;
  for (const ValidationCase& c : cases) {
    if (std::find(order.begin(), order.end(), c.family) == order.end()) order.push_back(c.family);
  }
  const auto families = byFamily(cases);
  std::vector<FamilyFit> fits;
  for (const std::string& family : order) fits.push_back(fitOf(family, families.at(family)));
  std::vector<const ValidationCase*> all;
  for (const ValidationCase& c : cases) all.push_back(&c);
  fits.push_back(fitOf("all", all));
  return fits;
}

std::string validationTable(const std::vector<FamilyFit>& fits, const std::vector<ValidationCase>& cases) {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "%-22s %6s %5s %8s %8s %7s %7s %7s  %s\n", "family", "cases", "ran", "median",
                "p90", "ratio", "<=10%", "<=25%", "worst case (simulated / measured)");
  out << line;
  for (const FamilyFit& f : fits) {
    const std::string worst = f.ran ? f.worst_label + " (" + format("%.2f", f.worst_ratio) + ")" : "-";
    std::snprintf(line, sizeof line, "%-22s %6zu %5zu %8s %8s %7s %7s %7s  %s\n", f.family.c_str(), f.cases, f.ran,
                  percent(f.median_error).c_str(), percent(f.p90_error).c_str(), format("%.3f", f.median_ratio).c_str(),
                  percent(f.within_10).c_str(), percent(f.within_25).c_str(), worst.c_str());
    out << line;
  }
  out << "(median and p90 of |simulated / measured - 1|; ratio: the median of simulated / measured)\n";
  size_t failed = 0;
  for (const ValidationCase& c : cases) failed += c.simulated_us ? 0 : 1;
  if (failed) {
    out << failed << " case" << (failed == 1 ? "" : "s") << " could not run:\n";
    for (const ValidationCase& c : cases) {
      if (!c.simulated_us) out << "  case " << c.index << " " << c.label << ": " << c.error << "\n";
    }
  }
  return out.str();
}

nlohmann::ordered_json validationJson(const std::vector<FamilyFit>& fits, const std::vector<ValidationCase>& cases,
                                      const std::string& hardware, const std::string& source) {
  nlohmann::ordered_json out;
  out["hardware"] = hardware;
  out["source"] = source;
  out["error_definition"] = "|simulated_us / measured_us - 1|";
  nlohmann::ordered_json families = nlohmann::ordered_json::array();
  for (const FamilyFit& f : fits) {
    families.push_back({{"family", f.family},
                        {"cases", f.cases},
                        {"ran", f.ran},
                        {"median_error", f.median_error},
                        {"p90_error", f.p90_error},
                        {"median_ratio", f.median_ratio},
                        {"within_10", f.within_10},
                        {"within_25", f.within_25},
                        {"worst_case", f.worst},
                        {"worst_label", f.worst_label},
                        {"worst_ratio", f.worst_ratio}});
  }
  out["families"] = std::move(families);
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const ValidationCase& c : cases) {
    nlohmann::ordered_json row = {{"index", c.index}, {"family", c.family}, {"label", c.label},
                                  {"measured_us", c.measured_us}};
    if (c.simulated_us) {
      row["simulated_us"] = *c.simulated_us;
    } else {
      row["error"] = c.error;
    }
    rows.push_back(std::move(row));
  }
  out["cases"] = std::move(rows);
  return out;
}

std::string validationCsv(const std::vector<ValidationCase>& cases) {
  std::ostringstream out;
  out << "index,family,case,measured_us,simulated_us,ratio,abs_error,error\n";
  for (const ValidationCase& c : cases) {
    out << c.index << "," << csvField(c.family) << "," << csvField(c.label) << "," << format("%.6g", c.measured_us)
        << ",";
    if (c.simulated_us) {
      out << format("%.6g", *c.simulated_us) << "," << format("%.6g", *c.simulated_us / c.measured_us) << ","
          << format("%.6g", errorOf(c)) << ",\n";
    } else {
      out << ",,," << csvField(c.error) << "\n";
    }
  }
  return out.str();
}

std::string validationHtml(const std::vector<FamilyFit>& fits, const std::vector<ValidationCase>& cases,
                           const std::string& hardware, const std::string& source) {
  std::ostringstream page;
  page << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>tpusim validate: " << escapeHtml(hardware)
       << "</title>\n<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
          "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
          "figure{display:inline-block;margin:0.5em}figcaption{font-weight:bold}</style></head><body>\n";
  page << "<h1>Simulated against measured op times</h1>\n<p>Hardware: " << escapeHtml(hardware)
       << ". Measurements: " << escapeHtml(source.empty() ? "(the file gives no source)" : source)
       << ". Error: |simulated / measured - 1|; ratio: the median of simulated / measured.</p>\n";
  page << "<table><tr><th>family</th><th>cases</th><th>ran</th><th>median error</th><th>p90 error</th>"
          "<th>ratio</th><th>within 10%</th><th>within 25%</th><th>worst case</th></tr>\n";
  for (const FamilyFit& f : fits) {
    page << "<tr><td>" << escapeHtml(f.family) << "</td><td>" << f.cases << "</td><td>" << f.ran << "</td><td>"
         << percent(f.median_error) << "</td><td>" << percent(f.p90_error) << "</td><td>"
         << format("%.3f", f.median_ratio) << "</td><td>" << percent(f.within_10) << "</td><td>"
         << percent(f.within_25) << "</td><td>"
         << (f.ran ? escapeHtml(f.worst_label) + " (" + format("%.2f", f.worst_ratio) + ")" : "-") << "</td></tr>\n";
  }
  page << "</table>\n<h2>Per family (log-log; dashed: simulated = measured)</h2>\n";
  const auto families = byFamily(cases);
  for (const FamilyFit& f : fits) {
    if (f.family != "all") page << familyPlot(f.family, families.at(f.family));
  }
  size_t failed = 0;
  for (const ValidationCase& c : cases) failed += c.simulated_us ? 0 : 1;
  if (failed) {
    page << "<h2>Cases that could not run</h2>\n<ul>\n";
    for (const ValidationCase& c : cases) {
      if (!c.simulated_us) page << "<li>case " << c.index << " " << escapeHtml(c.label) << ": " << escapeHtml(c.error) << "</li>\n";
    }
    page << "</ul>\n";
  }
  page << "</body></html>\n";
  return page.str();
}

}  // namespace tpusim
