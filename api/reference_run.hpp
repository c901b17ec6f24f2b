// `tpusim reference`: one step of a model run for real on a reference backend
// (the CPU executor, or the CUDA executor on an NVIDIA GPU), timed per op, with
// the same generated inputs as `tpusim run --functional --seed`. Its report has
// the per-op rows of report.json (keyed by the same op names), so `tpusim compare`
// can set the two side by side (docs/reference.md).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "api/session.hpp"
#include "reference/op_timing.hpp"

namespace tpusim {

// The value of the report's "kind": what `tpusim compare` checks its second argument for.
inline constexpr const char* kReferenceReportKind = "reference";

struct ReferenceRequest {
  RunRequest run;  // the model, its mode, batch and training options, the preset, the seed, the CPU threads
  std::string backend = "cpu";       // cpu or cuda
  std::string numerics = "reference";  // reference (the kernels' own order) or mxu (as the preset's MXUs compute)
  int64_t replicas = 1;              // cuda: data parallel over this many GPUs (NCCL all-reduce)
  reference::TimingOptions timing;
};

struct ReferenceOutcome {
  nlohmann::ordered_json report;
  NamedValues inputs;   // the generated inputs and labels
  NamedValues outputs;  // the step's outputs (stepOutputIds), in "outputs" order
};

// Throws Error: kInvalidConfig for an unknown backend or numerics, kNoDevice for
// the cuda backend without a CUDA GPU (or fewer GPUs than replicas), kUnsupported where
// this build has no CUDA, for replicas on the CPU backend and for a simulated slice
// (--topology, --dp, --tp, --pp).
ReferenceOutcome runReferenceBackend(const ReferenceRequest& request);

}  // namespace tpusim
