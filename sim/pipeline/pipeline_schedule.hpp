// Pipeline parallelism's schedule (docs/strategies.md, "Pipeline parallelism"): P
// stages, each on its own chips, run the forward (F) and backward (B) pass of M
// micro-batches in a fixed order per stage, as
//   GPipe (Huang et al., "GPipe", NeurIPS 2019): every forward, then every backward;
//   1F1B  (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
//          Clusters Using Megatron-LM", SC 2021, PipeDream-Flush): stage s runs
//          min(P - s - 1, M) warm-up forwards, then alternates one forward and one
//          backward, then drains the backwards.
// F of micro-batch m on stage s starts once stage s - 1 has finished it and its
// activations have arrived (send_ps of that boundary); B once stage s + 1 has finished
// it and the activation gradient has arrived, and once s ran F of m itself. A stage
// runs one task at a time, in its order. Plain C++, integer picoseconds, deterministic.
// The transfers are charged as fixed times per boundary (sized by the caller from the
// ICI model); they do not queue behind one another on the link.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpusim {

enum class PipelineSchedule { kGpipe, kOneForwardOneBackward };

// "gpipe" or "1f1b"; anything else is a one-line error (kInvalidConfig).
PipelineSchedule pipelineScheduleFromName(const std::string& name);
const char* pipelineScheduleName(PipelineSchedule schedule);

struct PipelineStage {
  uint64_t forward_ps = 0;        // one micro-batch's forward pass on the stage
  uint64_t backward_ps = 0;       // and its backward pass
  uint64_t activation_bytes = 0;  // what one micro-batch keeps from its F until its B
};

struct PipelineRequest {
  std::vector<PipelineStage> stages;
  uint32_t micro_batches = 1;
  // Per boundary s -> s + 1 (stages - 1 of them): one micro-batch's activations (forward)
  // or activation gradient (backward) between the neighbouring stages.
  std::vector<uint64_t> send_ps;
  PipelineSchedule schedule = PipelineSchedule::kOneForwardOneBackward;
};

struct PipelineTask {
  uint32_t stage;
  uint32_t micro_batch;
  bool backward;
  uint64_t start_ps;
  uint64_t end_ps;
};

struct StageOutcome {
  uint64_t busy_ps = 0;                // M x (forward + backward)
  uint64_t idle_ps = 0;                // step - busy
  uint32_t peak_in_flight = 0;         // most micro-batches between their F start and B end at once
  uint64_t peak_activation_bytes = 0;  // peak_in_flight x activation_bytes
};

struct PipelineOutcome {
  uint64_t step_ps = 0;  // the last task's end
  // Idle stage time over all stage time: sum idle / (P x step).
  double bubble = 0;
  std::vector<StageOutcome> stages;
  std::vector<PipelineTask> tasks;  // in each stage's order, stage by stage
};

// Empty stages, zero micro-batches or a send_ps of the wrong length: a one-line error.
PipelineOutcome schedulePipeline(const PipelineRequest& request);

// The bubble of P equal stages over M micro-batches with free transfers, for GPipe and
// 1F1B alike: (P - 1) / (M + P - 1).
double equalStageBubble(uint32_t stages, uint32_t micro_batches);

}  // namespace tpusim
