#include "report/mfu_section.hpp"

#include "report/peaks_section.hpp"

namespace tpusim {

double mfuPeakFlopsPerChip(const HardwareParams& hw, const std::string& precision) {
  const double bf16 = peaksSection(hw).at("mxu_flops_per_s").get<double>();
  return precision == "int8" ? bf16 * static_cast<double>(hw.config().mxu().int8_macs_per_pe()) : bf16;
}

nlohmann::ordered_json mfuSection(uint64_t model_flops, uint64_t chips, double step_time_s, double peak_flops_per_chip) {
  if (model_flops == 0 || chips == 0 || step_time_s <= 0) return nlohmann::ordered_json();
  nlohmann::ordered_json entry;
  entry["model_flops"] = model_flops;
  entry["chips"] = chips;
  entry["step_time_s"] = step_time_s;
  entry["peak_flops_per_s_per_chip"] = peak_flops_per_chip;
  entry["model_flops_per_s_per_chip"] = static_cast<double>(model_flops) / step_time_s / static_cast<double>(chips);
  entry["mfu"] = static_cast<double>(model_flops) / (step_time_s * static_cast<double>(chips) * peak_flops_per_chip);
  return entry;
}

nlohmann::ordered_json mfuSectionOf(const program::Program& program, const HardwareParams& hw, double step_time_s) {
  // A replica is one data-parallel copy of the model: tensor-parallel groups of chips.
  const uint64_t chips = program.replicas() < 1 ? 1 : program.replicas();
  const uint64_t tp = program.tensor_parallel() < 1 ? 1 : program.tensor_parallel();
  return mfuSection(program.model_flops() * (chips / tp), chips, step_time_s,
                    mfuPeakFlopsPerChip(hw, program.precision()));
}

}  // namespace tpusim
