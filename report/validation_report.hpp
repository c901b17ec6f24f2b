// tpusim validate's views: simulated beside measured op times, per case and
// per op family (docs/fidelity.md). The error of a case is |simulated /
// measured - 1|.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tpusim {

struct ValidationCase {
  size_t index = 0;     // in the measurement file
  std::string family;   // the case's op
  std::string label;    // "matmul 1024x512x256"
  double measured_us = 0;
  std::optional<double> simulated_us;  // empty when the case could not run
  std::string error;                   // why it could not run
};

struct FamilyFit {
  std::string family;  // "all" for every case
  size_t cases = 0;
  size_t ran = 0;
  double median_error = 0;  // of the cases that ran
  double p90_error = 0;     // nearest rank
  double median_ratio = 0;  // simulated / measured: below 1 is too fast
  double within_10 = 0;     // share of the cases that ran
  double within_25 = 0;
  size_t worst = 0;  // index of the case with the largest error
  double worst_ratio = 0;
  std::string worst_label;
};

// One row per family in order of first appearance, then "all".
std::vector<FamilyFit> fitByFamily(const std::vector<ValidationCase>& cases);

// The table validate prints, and a list of the cases that could not run.
std::string validationTable(const std::vector<FamilyFit>& fits, const std::vector<ValidationCase>& cases);

nlohmann::ordered_json validationJson(const std::vector<FamilyFit>& fits, const std::vector<ValidationCase>& cases,
                                      const std::string& hardware, const std::string& source);
std::string validationCsv(const std::vector<ValidationCase>& cases);
// A self-contained page: the table, and per family a log-log plot of simulated against
// measured time with the y = x line.
std::string validationHtml(const std::vector<FamilyFit>& fits, const std::vector<ValidationCase>& cases,
                           const std::string& hardware, const std::string& source);

}  // namespace tpusim
