// Adaptive precision by schedule (`tpusim run --precision-schedule float32:100,mixed_bfloat16:900`):
// a multi-step run whose precision policy changes between phases, as a user switching
// policies during training would compile each phase's step anew. Each phase's step is
// compiled and simulated cycle by cycle once; every step of a phase takes that step's
// time (the steps of a phase run the same Program on inputs already in HBM). The
// variables stay f32 under every policy, so a switch moves no data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/session.hpp"

namespace tpusim {

struct PrecisionPhase {
  std::string policy;  // a Keras policy name (frontend/train/precision_policy.hpp)
  uint64_t steps = 0;
};

// "POLICY:STEPS[,POLICY:STEPS...]". Throws Error (kInvalidConfig) for an empty schedule, an
// entry without ':' or with a step count that is not a positive integer, and the policy
// name's own error (unknown: kInvalidConfig; not built: kUnsupported).
std::vector<PrecisionPhase> parsePrecisionSchedule(const std::string& text);

// Runs `request` once per phase under that phase's policy. The outcome is the last phase's,
// its report with a "precision_schedule" section (docs/report-schema.md). A request that also sets
// --precision, --steps, --strategy or --functional is refused (kInvalidConfig or kUnsupported).
RunOutcome runPrecisionSchedule(const RunRequest& request);

}  // namespace tpusim
