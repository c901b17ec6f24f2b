// The roofline of a step (docs/reports.md, "Roofline"): each op placed by its arithmetic
// intensity (flops per HBM byte its DMAs moved) and the flop rate it achieved over its
// span (first instruction's start to last one's end), under the chip's compute roofs
// (report.json's "peaks") and its HBM bandwidth roof.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tpusim {

struct RooflinePoint {
  std::string op, type;
  std::string kind;  // "mxu" when the op ran on the MXUs, else "vpu"
  uint64_t flops = 0, hbm_bytes = 0;
  double intensity = 0;    // flops / hbm_bytes
  double flops_per_s = 0;  // flops / span
};

struct Roofline {
  double mxu_flops_per_s = 0, vpu_flops_per_s = 0, hbm_bytes_per_s = 0;
  double ridge = 0;                  // flops per byte where the HBM roof meets the MXU roof
  std::vector<RooflinePoint> ops;    // ops with flops and HBM traffic, in per_op order
  size_t ops_without_hbm_bytes = 0;  // flops but no HBM traffic (operands already in VMEM): no finite intensity
  size_t ops_without_flops = 0;      // data movement only
  RooflinePoint step;                // the whole step: all flops over all HBM bytes, over the step time

  // The roofline's bound at `intensity`: min(MXU peak, intensity x HBM bandwidth).
  double attainable(double intensity) const;
  bool hbmBound(double intensity) const { return intensity < ridge; }
};

// From report.json's "peaks", "per_op", "hbm", "clock_hz" and "step_time_s".
Roofline rooflineOf(const nlohmann::ordered_json& report);

}  // namespace tpusim
