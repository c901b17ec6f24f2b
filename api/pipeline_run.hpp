// Pipeline parallelism on a model (--pp, docs/strategies.md "Pipeline parallelism"):
// the training graph cut into P stages of equal layer counts
// (frontend/passes/pipeline_stages.hpp), each compiled for one micro-batch and
// simulated on its own SystemC chip with its data- and tensor-parallel collectives on
// its block of the slice; the activations and gradients crossing each boundary timed
// by the network model between neighbouring blocks; the step from the GPipe or 1F1B
// schedule (sim/pipeline), then each stage's gradient all-reduce and update.
#pragma once

#include "api/session.hpp"

namespace tpusim {

// The run of a request with pipeline_parallel > 1. report.json is stage 0's chip
// running one micro-batch, plus `parallelism` and the `pipeline` section.
RunOutcome runPipeline(const RunRequest& request, const HardwareParams& hw);

}  // namespace tpusim
