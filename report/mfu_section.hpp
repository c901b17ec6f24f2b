// report.json's "mfu" part (docs/report-schema.md, "mfu"): model-FLOPs utilization, the
// model's FLOPs of one step on every chip (program.model_flops per replica, times the
// replicas) over what the chips' MXUs could do in the step time at their peak rate, as
// Chowdhery et al. 2022 ("PaLM", Appendix B) define it: no credit for recomputation,
// padding or vector work, so plans that remat or pad score lower for the same step.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "sim/common/params.hpp"
#include "traces/program.pb.h"

namespace tpusim {

// The MXUs' peak FLOP/s of one chip at a precision policy's matmul dtype: the bf16 rate
// (an f32 matmul at default precision is one bf16 pass), times mxu.int8_macs_per_pe
// under int8.
double mfuPeakFlopsPerChip(const HardwareParams& hw, const std::string& precision);

// `model_flops`: of the whole step over all `chips`; empty where it is 0 (unknown).
nlohmann::ordered_json mfuSection(uint64_t model_flops, uint64_t chips, double step_time_s, double peak_flops_per_chip);

// The section of a run of `program` (data- and tensor-parallel over its replicas).
nlohmann::ordered_json mfuSectionOf(const program::Program& program, const HardwareParams& hw, double step_time_s);

}  // namespace tpusim
