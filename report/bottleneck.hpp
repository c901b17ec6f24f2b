// The bottleneck verdict at the top of report.html (docs/reports.md, "Verdict"): where
// the step's time goes, in one sentence, and the figures it rests on.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/roofline.hpp"

namespace tpusim {

struct BottleneckVerdict {
  std::string busiest_unit;  // highest utilization; on a tie the first in "units" order
  double busiest_utilization = 0;
  bool hbm_bound = false;  // by the roofline: the step's intensity is below the ridge point
  std::string headline;
  std::vector<std::string> evidence;
};

BottleneckVerdict bottleneckVerdict(const nlohmann::ordered_json& report, const Roofline& roofline);

}  // namespace tpusim
