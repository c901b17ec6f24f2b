// Pipeline parallelism on a model (--pp, docs/strategies.md "Pipeline parallelism"):
// the training graph cut into P stages of equal layer counts
// (frontend/passes/pipeline_stages.hpp), each compiled for one micro-batch and
// simulated on its own SystemC chip with its data- and tensor-parallel collectives on
// its block of the slice; the activations and gradients crossing each boundary timed
// by the network model between neighbouring blocks; the step from the GPipe or 1F1B
// schedule (sim/pipeline), then each stage's gradient all-reduce and update.
#pragma once

#include <optional>
#include <vector>

#include "api/parallel_degrees.hpp"
#include "api/session.hpp"
#include "frontend/passes/pipeline_stages.hpp"

namespace tpusim {

// A pipeline request's stages, each compiled for one micro-batch, not yet simulated.
struct CompiledPipeline {
  RunRequest request;
  ParallelDegrees degrees;
  std::optional<Topology> slice;
  std::optional<Topology> block;  // the part of the slice each stage runs on
  PipelineStages cut;
  std::vector<program::Program> stages;  // stage s's Program: its memory plan holds one micro-batch
};

// Checks a request with pipeline_parallel > 1, cuts its training graph into stages and
// compiles each for `hw`; bad options are one-line errors.
CompiledPipeline compilePipeline(const RunRequest& request, const HardwareParams& hw);

// Simulates each stage on `hw`, then the schedule. report.json is stage 0's chip running
// one micro-batch, plus `parallelism` and the `pipeline` section, whose per-stage HBM
// peaks (micro-batches in flight included) are reported, not held to the preset's HBM.
RunOutcome simulatePipeline(CompiledPipeline pipeline, const HardwareParams& hw);

// The run of a request with pipeline_parallel > 1: compilePipeline, simulatePipeline, and
// a stage whose peak exceeds hbm.capacity_gib is a one-line error (kResource).
RunOutcome runPipeline(const RunRequest& request, const HardwareParams& hw);

}  // namespace tpusim
