#include "report/peaks_section.hpp"

namespace tpusim {

nlohmann::ordered_json peaksSection(const HardwareParams& hw) {
  const config::HardwareConfig& c = hw.config();
  const double clock_hz = c.chip().clock_mhz() * 1e6;
  const auto cores = static_cast<double>(c.chip().tensor_cores());
  // Every PE does one MAC (2 flops) per cycle; every VPU lane-sublane one element op.
  const double mxu = 2.0 * static_cast<double>(c.mxu().rows() * c.mxu().cols() * c.mxu().per_core()) * cores * clock_hz;
  const double vpu = static_cast<double>(c.vpu().lanes() * c.vpu().sublanes()) * cores * clock_hz;
  const double hbm = c.hbm().bandwidth_gbps() * 1e9;
  nlohmann::ordered_json entry;
  entry["mxu_flops_per_s"] = mxu;
  entry["vpu_flops_per_s"] = vpu;
  entry["hbm_bytes_per_s"] = hbm;
  entry["ridge_flops_per_byte"] = mxu / hbm;
  return entry;
}

}  // namespace tpusim
