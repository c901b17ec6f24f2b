// GPipe and 1F1B schedules over pipeline stages (sim/pipeline/pipeline_schedule.hpp)
// against their closed forms.
#include "sim/pipeline/pipeline_schedule.hpp"

#include <gtest/gtest.h>

#include <string>

#include "sim/common/error.hpp"

namespace tpusim {
namespace {

PipelineRequest equalStages(uint32_t p, uint32_t m, PipelineSchedule schedule) {
  PipelineRequest request;
  request.stages.assign(p, PipelineStage{100, 200, 1000});
  request.micro_batches = m;
  request.send_ps.assign(p - 1, 0);
  request.schedule = schedule;
  return request;
}

TEST(PipelineSchedule, EqualStagesHaveTheClosedFormBubble) {
  for (const PipelineSchedule schedule : {PipelineSchedule::kGpipe, PipelineSchedule::kOneForwardOneBackward}) {
    for (const uint32_t p : {2u, 4u}) {
      for (const uint32_t m : {1u, 4u, 8u}) {
        const PipelineOutcome out = schedulePipeline(equalStages(p, m, schedule));
        // (M + P - 1)(F + B): the last micro-batch's forward reaches the last stage after P - 1
        // more forwards, its backward returns over P - 1 more backwards; e.g. P 4, M 8: 11 x 300.
        EXPECT_EQ(out.step_ps, (m + p - 1) * 300u) << pipelineScheduleName(schedule) << " " << p << " " << m;
        // Each stage is busy M (F + B), idle (P - 1)(F + B): bubble (P - 1) / (M + P - 1).
        EXPECT_DOUBLE_EQ(out.bubble, equalStageBubble(p, m));
        for (const StageOutcome& stage : out.stages) {
          EXPECT_EQ(stage.busy_ps, m * 300u);
          EXPECT_EQ(stage.idle_ps, (p - 1) * 300u);
        }
        EXPECT_EQ(out.tasks.size(), 2u * p * m);
      }
    }
  }
  EXPECT_DOUBLE_EQ(equalStageBubble(4, 8), 3.0 / 11);
}

TEST(PipelineSchedule, OneFOneBHoldsPMicroBatchesWhereGpipeHoldsM) {
  const PipelineOutcome gpipe = schedulePipeline(equalStages(4, 8, PipelineSchedule::kGpipe));
  const PipelineOutcome ofob = schedulePipeline(equalStages(4, 8, PipelineSchedule::kOneForwardOneBackward));
  for (uint32_t s = 0; s < 4; ++s) {
    // GPipe: all 8 forwards before the first backward, on every stage.
    EXPECT_EQ(gpipe.stages[s].peak_in_flight, 8u) << s;
    EXPECT_EQ(gpipe.stages[s].peak_activation_bytes, 8000u);
    // 1F1B: stage s runs P - s - 1 warm-up forwards and one more before its first backward.
    EXPECT_EQ(ofob.stages[s].peak_in_flight, 4 - s) << s;
  }
  // Fewer micro-batches than stages: 1F1B cannot hold more than M.
  EXPECT_EQ(schedulePipeline(equalStages(4, 2, PipelineSchedule::kOneForwardOneBackward)).stages[0].peak_in_flight, 2u);
}

TEST(PipelineSchedule, TransfersBetweenStagesAddToTheCriticalPath) {
  PipelineRequest request;
  request.stages = {{100, 200, 0}, {150, 250, 0}};
  request.micro_batches = 1;
  request.send_ps = {50};
  // F0 100 + send 50 + F1 150 + B1 250 + send 50 + B0 200 = 800.
  const PipelineOutcome out = schedulePipeline(request);
  EXPECT_EQ(out.step_ps, 800u);
  EXPECT_EQ(out.stages[0].idle_ps, 500u);
  EXPECT_EQ(out.stages[1].idle_ps, 400u);
  EXPECT_DOUBLE_EQ(out.bubble, 900.0 / 1600);
}

TEST(PipelineSchedule, BadRequestsAreOneLineErrors) {
  const auto message = [](const PipelineRequest& request) {
    try {
      schedulePipeline(request);
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::kInvalidConfig);
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(PipelineRequest{}), "a pipeline needs at least one stage");
  PipelineRequest zero = equalStages(2, 1, PipelineSchedule::kGpipe);
  zero.micro_batches = 0;
  EXPECT_EQ(message(zero), "a pipeline needs at least one micro-batch");
  PipelineRequest sends = equalStages(3, 1, PipelineSchedule::kGpipe);
  sends.send_ps = {1};
  EXPECT_EQ(message(sends), "a pipeline of 3 stages needs 2 transfer times, got 1");
  try {
    pipelineScheduleFromName("interleaved");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()), "unknown pipeline schedule 'interleaved' (choose gpipe or 1f1b)");
  }
}

}  // namespace
}  // namespace tpusim
