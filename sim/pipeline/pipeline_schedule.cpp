#include "sim/pipeline/pipeline_schedule.hpp"

#include <algorithm>
#include <limits>

#include "sim/common/error.hpp"

namespace tpusim {

namespace {

struct Step {
  uint32_t micro_batch;
  bool backward;
};

// Stage s's order of tasks under the schedule.
std::vector<Step> orderOf(PipelineSchedule schedule, uint32_t stage, uint32_t stages, uint32_t m) {
  std::vector<Step> order;
  if (schedule == PipelineSchedule::kGpipe) {
    for (uint32_t i = 0; i < m; ++i) order.push_back({i, false});
    for (uint32_t i = 0; i < m; ++i) order.push_back({i, true});
    return order;
  }
  const uint32_t warmup = std::min(stages - stage - 1, m);
  for (uint32_t i = 0; i < warmup; ++i) order.push_back({i, false});
  for (uint32_t i = 0; i + warmup < m; ++i) {
    order.push_back({warmup + i, false});
    order.push_back({i, true});
  }
  for (uint32_t i = m - warmup; i < m; ++i) order.push_back({i, true});
  return order;
}

constexpr uint64_t kNotYet = std::numeric_limits<uint64_t>::max();

}  // namespace

PipelineSchedule pipelineScheduleFromName(const std::string& name) {
  if (name == "gpipe") return PipelineSchedule::kGpipe;
  if (name == "1f1b") return PipelineSchedule::kOneForwardOneBackward;
  throw Error(ErrorKind::kInvalidConfig, "unknown pipeline schedule '" + name + "' (choose gpipe or 1f1b)");
}

const char* pipelineScheduleName(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::kGpipe ? "gpipe" : "1f1b";
}

PipelineOutcome schedulePipeline(const PipelineRequest& request) {
  const auto stages = static_cast<uint32_t>(request.stages.size());
  const uint32_t m = request.micro_batches;
  if (stages == 0) throw Error(ErrorKind::kInvalidConfig, "a pipeline needs at least one stage");
  if (m == 0) throw Error(ErrorKind::kInvalidConfig, "a pipeline needs at least one micro-batch");
  if (request.send_ps.size() != stages - 1) {
    throw Error(ErrorKind::kInvalidConfig, "a pipeline of " + std::to_string(stages) + " stages needs " +
                                               std::to_string(stages - 1) + " transfer times, got " +
                                               std::to_string(request.send_ps.size()));
  }
  // End times of F and B, per stage and micro-batch.
  std::vector<std::vector<uint64_t>> f_end(stages, std::vector<uint64_t>(m, kNotYet));
  std::vector<std::vector<uint64_t>> b_end = f_end;
  std::vector<std::vector<Step>> orders;
  for (uint32_t s = 0; s < stages; ++s) orders.push_back(orderOf(request.schedule, s, stages, m));
  std::vector<size_t> next(stages, 0);
  std::vector<uint64_t> free_at(stages, 0);
  std::vector<std::vector<PipelineTask>> done(stages);
  size_t remaining = static_cast<size_t>(stages) * m * 2;
  while (remaining > 0) {
    bool progressed = false;
    for (uint32_t s = 0; s < stages; ++s) {
      while (next[s] < orders[s].size()) {
        const Step step = orders[s][next[s]];
        uint64_t ready = free_at[s];
        if (!step.backward && s > 0) {
          if (f_end[s - 1][step.micro_batch] == kNotYet) break;
          ready = std::max(ready, f_end[s - 1][step.micro_batch] + request.send_ps[s - 1]);
        }
        if (step.backward) {
          if (f_end[s][step.micro_batch] == kNotYet) break;
          if (s + 1 < stages) {
            if (b_end[s + 1][step.micro_batch] == kNotYet) break;
            ready = std::max(ready, b_end[s + 1][step.micro_batch] + request.send_ps[s]);
          }
        }
        const PipelineStage& cost = request.stages[s];
        const uint64_t end = ready + (step.backward ? cost.backward_ps : cost.forward_ps);
        (step.backward ? b_end : f_end)[s][step.micro_batch] = end;
        done[s].push_back({s, step.micro_batch, step.backward, ready, end});
        free_at[s] = end;
        ++next[s];
        --remaining;
        progressed = true;
      }
    }
    if (!progressed) throw Error(ErrorKind::kInternal, "pipeline schedule deadlocked");
  }

  PipelineOutcome outcome;
  for (uint32_t s = 0; s < stages; ++s) outcome.step_ps = std::max(outcome.step_ps, free_at[s]);
  uint64_t idle = 0;
  for (uint32_t s = 0; s < stages; ++s) {
    StageOutcome stage;
    stage.busy_ps = static_cast<uint64_t>(m) * (request.stages[s].forward_ps + request.stages[s].backward_ps);
    stage.idle_ps = outcome.step_ps - stage.busy_ps;
    idle += stage.idle_ps;
    // In flight: from F's start to B's end. Sweep the starts and ends in time order
    // (an end before a start at the same time).
    std::vector<std::pair<uint64_t, int>> edges;
    for (uint32_t i = 0; i < m; ++i) {
      uint64_t f_start = 0;
      for (const PipelineTask& t : done[s]) {
        if (t.micro_batch == i && !t.backward) f_start = t.start_ps;
      }
      edges.emplace_back(f_start, +1);
      edges.emplace_back(b_end[s][i], -1);
    }
    std::sort(edges.begin(), edges.end());
    int live = 0;
    for (const auto& [time, delta] : edges) {
      live += delta;
      stage.peak_in_flight = std::max(stage.peak_in_flight, static_cast<uint32_t>(live));
    }
    stage.peak_activation_bytes = stage.peak_in_flight * request.stages[s].activation_bytes;
    outcome.stages.push_back(stage);
    outcome.tasks.insert(outcome.tasks.end(), done[s].begin(), done[s].end());
  }
  const double total = static_cast<double>(stages) * static_cast<double>(outcome.step_ps);
  outcome.bubble = total == 0 ? 0 : static_cast<double>(idle) / total;
  return outcome;
}

double equalStageBubble(uint32_t stages, uint32_t micro_batches) {
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

}  // namespace tpusim
