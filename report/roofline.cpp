#include "report/roofline.hpp"

#include <algorithm>

namespace tpusim {

double Roofline::attainable(double intensity) const {
  return std::min(mxu_flops_per_s, intensity * hbm_bytes_per_s);
}

Roofline rooflineOf(const nlohmann::ordered_json& report) {
  Roofline roofline;
  const auto& peaks = report.at("peaks");
  roofline.mxu_flops_per_s = peaks.at("mxu_flops_per_s").get<double>();
  roofline.vpu_flops_per_s = peaks.at("vpu_flops_per_s").get<double>();
  roofline.hbm_bytes_per_s = peaks.at("hbm_bytes_per_s").get<double>();
  roofline.ridge = roofline.mxu_flops_per_s / roofline.hbm_bytes_per_s;
  const double clock_hz = report.at("clock_hz").get<double>();
  uint64_t flops = 0;
  for (const auto& op : report.at("per_op")) {
    RooflinePoint point;
    point.op = op.at("op").get<std::string>();
    point.type = op.at("type").get<std::string>();
    point.kind = op.at("mxu_busy_cycles").get<uint64_t>() > 0 ? "mxu" : "vpu";
    point.flops = op.at("flops").get<uint64_t>();
    point.hbm_bytes = op.at("hbm_bytes").get<uint64_t>();
    flops += point.flops;
    const uint64_t span = op.at("end_cycle").get<uint64_t>() - op.at("start_cycle").get<uint64_t>();
    if (point.flops == 0) {
      ++roofline.ops_without_flops;
      continue;
    }
    if (point.hbm_bytes == 0 || span == 0) {
      ++roofline.ops_without_hbm_bytes;
      continue;
    }
    point.intensity = static_cast<double>(point.flops) / static_cast<double>(point.hbm_bytes);
    point.flops_per_s = static_cast<double>(point.flops) / (static_cast<double>(span) / clock_hz);
    roofline.ops.push_back(point);
  }
  const auto& hbm = report.at("hbm");
  roofline.step.op = "step";
  roofline.step.kind = "step";
  roofline.step.flops = flops;
  roofline.step.hbm_bytes = hbm.at("bytes_read").get<uint64_t>() + hbm.at("bytes_written").get<uint64_t>();
  if (roofline.step.hbm_bytes > 0) {
    roofline.step.intensity = static_cast<double>(flops) / static_cast<double>(roofline.step.hbm_bytes);
  }
  const double step_s = report.at("step_time_s").get<double>();
  if (step_s > 0) roofline.step.flops_per_s = static_cast<double>(flops) / step_s;
  return roofline;
}

}  // namespace tpusim
