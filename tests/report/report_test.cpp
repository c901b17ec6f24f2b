#include "report/report.hpp"

#include <gtest/gtest.h>

#include "api/session.hpp"

namespace tpusim {
namespace {

RunRequest mlpRequest() {
  RunRequest request;
  request.model_path = TPUSIM_SOURCE_DIR "/traces/mlp.onnx";
  request.hw = "tpuv4";
  return request;
}

TEST(Report, HasTheDocumentedSchema) {
  const RunOutcome outcome = runRequest(mlpRequest());
  const auto& r = outcome.report;
  EXPECT_EQ(r["schema_version"], kReportSchemaVersion);
  EXPECT_EQ(r["model"], "mlp.onnx");
  EXPECT_EQ(r["hw"], "tpuv4");
  EXPECT_EQ(r["mode"], "training");
  EXPECT_EQ(r["clock_hz"].get<double>(), 1050e6);
  const uint64_t total = r["total_cycles"].get<uint64_t>();
  EXPECT_GT(total, 0u);
  EXPECT_DOUBLE_EQ(r["step_time_s"].get<double>(), static_cast<double>(total) / 1050e6);
  ASSERT_TRUE(r["units"].contains("chip0.core0.mxu0"));
  ASSERT_TRUE(r["units"].contains("chip0.hbm"));
  for (const auto& [name, unit] : r["units"].items()) {
    EXPECT_LE(unit["busy_cycles"].get<uint64_t>(), total) << name;
    EXPECT_DOUBLE_EQ(unit["utilization"].get<double>(),
                     static_cast<double>(unit["busy_cycles"].get<uint64_t>()) / static_cast<double>(total))
        << name;
  }
  ASSERT_EQ(r["ops"].size(), static_cast<size_t>(outcome.program.chips(0).instructions_size()));
  uint64_t last_end = 0;
  for (const auto& op : r["ops"]) {
    for (const char* field : {"name", "type", "unit", "start_cycle", "end_cycle", "flops", "bytes"}) {
      EXPECT_TRUE(op.contains(field)) << field;
    }
    EXPECT_LE(op["start_cycle"].get<uint64_t>(), op["end_cycle"].get<uint64_t>());
    last_end = std::max(last_end, op["end_cycle"].get<uint64_t>());
  }
  EXPECT_EQ(last_end, total);
  for (const auto& stat : r["stats"]) EXPECT_FALSE(stat["description"].get<std::string>().empty());
}

TEST(Report, IdenticalInputsGiveIdenticalReports) {
  EXPECT_EQ(runRequest(mlpRequest()).report.dump(), runRequest(mlpRequest()).report.dump());
}

TEST(Report, FlopsAddUpToTheModel) {
  // Training a 784-512-512-10 MLP at batch 32 does 3 matmuls per layer:
  // 3 x 2 x 32 x (784x512 + 512x512 + 512x10) = 6 x 32 x 668,672 flops, less
  // the input gradient of the first layer (not computed): 2 x 32 x 784 x 512.
  const RunOutcome outcome = runRequest(mlpRequest());
  uint64_t mxu_flops = 0;
  for (const auto& op : outcome.report["ops"]) {
    if (op["unit_kind"] == "mxu") mxu_flops += op["flops"].get<uint64_t>();
  }
  EXPECT_EQ(mxu_flops, 6ull * 32 * 668672 - 2ull * 32 * 784 * 512);
}

}  // namespace
}  // namespace tpusim
