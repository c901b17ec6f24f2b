// `tpusim run --steps N`: the simulated step, fed by the host for N steps
// (sim/host/host_model.hpp). The chip simulates one step; every step runs the
// same Program, so each of the N steps computes for that step's simulated time
// (a shortcut of docs/architecture.md decision 4, named in the report), and the
// host model adds what the device waits for: the input pipeline, PCIe infeed
// and checkpoints.
#pragma once

#include <nlohmann/json.hpp>

#include "sim/common/params.hpp"
#include "sim/common/stats.hpp"

namespace tpusim {

// The most steps a run simulates: the host model keeps about 80 bytes per step (0.8 GB here),
// and a pipeline's steady state shows within a few steps.
inline constexpr uint64_t kMaxHostSteps = 10'000'000;
// An Error (kInvalidConfig) naming the limit when `steps` is above it.
void checkHostSteps(uint64_t steps);

// Runs the host for `steps` steps of `step_cycles` each and returns report.json's
// "host" section. The batch's bytes per example over PCIe are the model's own
// input bytes (`report["memory"]["bytes_by_role"]["input"]` / batch); the
// checkpointed state is its weights and optimizer state. Stats go under "host0".
nlohmann::ordered_json runHostSteps(const HardwareParams& hw, const nlohmann::ordered_json& report, uint64_t steps,
                                    StatsRegistry& stats);

}  // namespace tpusim
