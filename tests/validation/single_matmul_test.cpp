// End to end against the closed forms: an ONNX model of one MatMul goes
// through import, lowering and the SystemC chip, and the step takes exactly
// the cycles that the DMA, HBM and MXU formulas predict.
#include <fstream>

#include <gtest/gtest.h>

#include "api/session.hpp"
#include "tests/support/onnx_builder.hpp"

namespace tpusim {
namespace {

TEST(SingleMatMul, StepTimeIsTheSumOfTheClosedForms) {
  testing::OnnxBuilder b;
  b.input("x", {64, 256}).weight("w", {256, 128});
  b.node("MatMul", {"x", "w"}, "y");
  b.output("y");
  const std::string path = ::testing::TempDir() + "/single_matmul.onnx";
  {
    std::ofstream file(path, std::ios::binary);
    b.model().SerializeToOstream(&file);
  }
  RunRequest request;
  request.model_path = path;
  request.mode = "inference";
  // One core with one MXU at 1 GHz; HBM moves 1000 B per cycle with 100 cycles of latency;
  // the kernel's launch takes 50 cycles.
  request.overrides = {{"chip.tensor_cores", "1"},
                       {"mxu.per_core", "1"},
                       {"chip.clock_mhz", "1000"},
                       {"hbm.bandwidth_gbps", "1000"},
                       {"hbm.latency_ns", "100"},
                       {"core.kernel_launch_cycles", "50"}};
  const RunOutcome outcome = runRequest(request);
  // launch                                                                     ->    0 ..   50
  // load x   64 x 256 x 4 B = 65536 B: ceil(65.536) = 66 + 100 latency      ->   50 ..  216 (dma0)
  // load w  256 x 128 x 4 B = 131072 B: in flight with x (tpuv4's dma.max_outstanding 4),
  //         on the bus after x: 116 .. 248, + 100                              ->   50 ..  348 (dma0)
  // matmul  M=64 K=256 N=128 on 128x128: F = 2, 128 + 1 x max(64, 128) + (64 + 128 + 128 - 2)
  //         = 128 + 128 + 318 = 574                                            ->  348 ..  922 (mxu0)
  // store y  64 x 128 x 4 B = 32768 B: 33 + 100                                ->  922 .. 1055 (dma1)
  EXPECT_EQ(outcome.report["total_cycles"].get<uint64_t>(), 1055u);
  const auto& ops = outcome.report["ops"];
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[0]["start_cycle"].get<uint64_t>(), 50u);
  EXPECT_EQ(ops[0]["end_cycle"].get<uint64_t>(), 216u);
  EXPECT_EQ(ops[1]["end_cycle"].get<uint64_t>(), 348u);
  EXPECT_EQ(ops[2]["unit"], "chip0.core0.mxu0");
  EXPECT_EQ(ops[2]["start_cycle"].get<uint64_t>(), 348u);
  EXPECT_EQ(ops[2]["end_cycle"].get<uint64_t>(), 922u);
  EXPECT_EQ(ops[3]["unit"], "chip0.core0.dma1");
  EXPECT_DOUBLE_EQ(outcome.report["step_time_s"].get<double>(), 1055e-9);
  EXPECT_EQ(outcome.report["units"]["chip0.hbm"]["busy_cycles"].get<uint64_t>(), 66u + 132 + 33);
  uint64_t launches = 0;
  for (const auto& stat : outcome.report["stats"]) {
    if (stat["name"] == "chip0.core0.kernel_launches") launches = stat["value"].get<uint64_t>();
  }
  EXPECT_EQ(launches, 1u);
}

}  // namespace
}  // namespace tpusim
