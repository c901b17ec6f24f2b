#include "report/bottleneck.hpp"

#include <cstdio>
#include <map>

namespace tpusim {

namespace {

std::string format(const char* pattern, double a, double b = 0, double c = 0) {
  char text[256];
  std::snprintf(text, sizeof(text), pattern, a, b, c);
  return text;
}

}  // namespace

BottleneckVerdict bottleneckVerdict(const nlohmann::ordered_json& report, const Roofline& roofline) {
  BottleneckVerdict verdict;
  verdict.busiest_utilization = -1;
  double mxu_sum = 0, mxu_count = 0;
  for (const auto& [name, unit] : report.at("units").items()) {
    const double utilization = unit.at("utilization").get<double>();
    if (utilization > verdict.busiest_utilization) {
      verdict.busiest_utilization = utilization;
      verdict.busiest_unit = name;
    }
    if (unit.contains("mac_utilization")) mxu_sum += utilization, mxu_count += 1;
  }
  const RooflinePoint& step = roofline.step;
  verdict.hbm_bound = step.hbm_bytes > 0 && roofline.hbmBound(step.intensity);
  const std::string busiest =
      verdict.busiest_unit + format(" (busy %.1f%% of the step)", 100 * verdict.busiest_utilization);
  if (step.hbm_bytes == 0) {
    verdict.headline = "Compute-bound: the step moves no bytes to or from HBM. Busiest unit: " + busiest + ".";
  } else {
    verdict.headline = std::string(verdict.hbm_bound ? "HBM-bound" : "Compute-bound") +
                       " by the roofline: " + format("%.1f flops per HBM byte", step.intensity) +
                       (verdict.hbm_bound ? ", below" : ", at or above") +
                       format(" the ridge point of %.1f. Busiest unit: ", roofline.ridge) + busiest + ".";
  }
  verdict.evidence.push_back(format("Step: %.4g flops and %.4g HBM bytes in %.4g us.", static_cast<double>(step.flops),
                                    static_cast<double>(step.hbm_bytes), report.at("step_time_s").get<double>() * 1e6));
  if (step.hbm_bytes > 0) {
    const double attainable = roofline.attainable(step.intensity);
    verdict.evidence.push_back(
        format("Roofline at that intensity: %.4g TFLOP/s attainable; achieved %.4g TFLOP/s (%.1f%%).",
               attainable / 1e12, step.flops_per_s / 1e12, 100 * step.flops_per_s / attainable));
  }
  verdict.evidence.push_back(format("Ridge point: MXU peak %.4g TFLOP/s / HBM peak %.4g GB/s = %.1f flops per byte.",
                                    roofline.mxu_flops_per_s / 1e12, roofline.hbm_bytes_per_s / 1e9, roofline.ridge));
  const auto& hbm = report.at("hbm");
  verdict.evidence.push_back(format("HBM: %.1f GB/s of %.0f GB/s peak (%.1f%% of peak bandwidth).",
                                    hbm.at("achieved_gbps").get<double>(), hbm.at("peak_gbps").get<double>(),
                                    100 * hbm.at("bandwidth_utilization").get<double>()));
  if (mxu_count > 0) {
    verdict.evidence.push_back(
        format("MXUs: busy %.1f%% of the step on average over %.0f arrays.", 100 * mxu_sum / mxu_count, mxu_count));
  }
  // Which unit kind bounds the ops, weighted by the cycles each needs at the least.
  std::map<std::string, double> bound;
  double total = 0;
  for (const auto& op : report.at("per_op")) {
    const auto cycles = static_cast<double>(op.at("bound_cycles").get<uint64_t>());
    bound[op.at("bound_by").get<std::string>()] += cycles;
    total += cycles;
  }
  if (total > 0) {
    std::string line = "Ops' bounding unit kinds, weighted by the cycles each op needs at the least:";
    const char* separator = " ";
    for (const auto& [kind, cycles] : bound) {
      line += separator + kind + format(" %.1f%%", 100 * cycles / total);
      separator = ", ";
    }
    verdict.evidence.push_back(line + ".");
  }
  return verdict;
}

}  // namespace tpusim
