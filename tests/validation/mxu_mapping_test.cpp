// How the compiler maps GEMMs onto the MXUs, end to end through the simulator:
// the split of a tile over a core's MXUs, the tiling objective and the f32
// precision passes, each against the MXU's closed form (docs/mxu.md).
#include <fstream>

#include <gtest/gtest.h>

#include "api/session.hpp"
#include "sim/common/error.hpp"
#include "tests/support/onnx_builder.hpp"

namespace tpusim {
namespace {

std::string matmulModel(int64_t m, int64_t k, int64_t n, const std::string& name) {
  testing::OnnxBuilder b;
  b.input("x", {m, k}).input("w", {k, n});
  b.node("MatMul", {"x", "w"}, "y");
  b.output("y");
  const std::string path = ::testing::TempDir() + "/" + name + ".onnx";
  std::ofstream file(path, std::ios::binary);
  b.model().SerializeToOstream(&file);
  return path;
}

RunRequest oneCore(const std::string& path) {
  RunRequest request;
  request.model_path = path;
  request.mode = "inference";
  request.overrides = {{"chip.tensor_cores", "1"}};
  return request;
}

// The MXU instructions of the report's instruction list.
std::vector<nlohmann::ordered_json> mxuOps(const RunOutcome& outcome) {
  std::vector<nlohmann::ordered_json> ops;
  for (const auto& op : outcome.report["ops"]) {
    if (op["unit_kind"] == "mxu") ops.push_back(op);
  }
  return ops;
}

TEST(MxuMapping, NarrowOutputsSplitTheRowsOverTheMxus) {
  // y[512, 10] = x[512, 1024] w[1024, 10] on one tpuv4 core (4 MXUs of 128 x 128).
  // By columns each MXU would take M=512, N=3: 8 folds, g = max(512, 128):
  //   128 + 7 x 512 + (512 + 128 + 3 - 2) = 4353 cycles.
  // By rows each takes M=128, N=10: 128 + 7 x 128 + (128 + 128 + 10 - 2) = 1288 cycles.
  const RunOutcome outcome = runRequest(oneCore(matmulModel(512, 1024, 10, "narrow")));
  const auto ops = mxuOps(outcome);
  ASSERT_EQ(ops.size(), 4u);
  for (const auto& op : ops) EXPECT_EQ(op["end_cycle"].get<uint64_t>() - op["start_cycle"].get<uint64_t>(), 1288u);
  const auto& per_op = outcome.report["per_op"][0];
  EXPECT_NE(per_op["tiling"].get<std::string>().find("mxu_split=rows"), std::string::npos);
  EXPECT_EQ(per_op["mxu_folds"].get<uint64_t>(), 4u * 8);
  // busy = stream + stall + fill/drain per MXU: 8 x 128 + (128 first tile + 7 x 0) + (128 + 10 - 2) = 1288
  EXPECT_EQ(per_op["mxu_stream_cycles"].get<uint64_t>(), 4u * 1024);
  EXPECT_EQ(per_op["mxu_weight_load_stall_cycles"].get<uint64_t>(), 4u * 128);
  EXPECT_EQ(per_op["mxu_fill_drain_cycles"].get<uint64_t>(), 4u * 136);
}

TEST(MxuMapping, TilingForCyclesBeatsTilingForBytesWhenTheMxusBind) {
  // x[1919, 1378] w[1378, 2561] in f32 on one core. The fewest bytes keeps all of x
  // and streams 128-column blocks of w past it; the MXU closed form prefers 384-row
  // tiles of x streaming past 1408-column blocks of w, which moves 24% more bytes
  // but keeps the arrays busy for fewer cycles (437,837 against 474,869 over the
  // four MXUs), and the step is shorter.
  const std::string path = matmulModel(1919, 1378, 2561, "objective");
  RunRequest bytes = oneCore(path);
  bytes.tiling_objective = "bytes";
  RunRequest cycles = oneCore(path);
  cycles.tiling_objective = "cycles";
  const RunOutcome by_bytes = runRequest(bytes), by_cycles = runRequest(cycles);
  EXPECT_LT(by_cycles.report["per_op"][0]["mxu_busy_cycles"].get<uint64_t>(),
            by_bytes.report["per_op"][0]["mxu_busy_cycles"].get<uint64_t>());
  EXPECT_GT(by_cycles.report["per_op"][0]["hbm_bytes"].get<uint64_t>(),
            by_bytes.report["per_op"][0]["hbm_bytes"].get<uint64_t>());
  EXPECT_LT(by_cycles.report["total_cycles"].get<uint64_t>(), by_bytes.report["total_cycles"].get<uint64_t>());
}

TEST(MxuMapping, F32PrecisionSetsThePasses) {
  // y[128, 512] = x[128, 128] w[128, 512]: each MXU takes 128 columns, one fold per pass.
  // DEFAULT: 128 + 382 = 510; HIGH: 3 folds, 128 + 2 x 128 + 382 = 766;
  // HIGHEST: 6 folds, 128 + 5 x 128 + 382 = 1150.
  const std::string path = matmulModel(128, 128, 512, "passes");
  for (const auto& [precision, expected] :
       {std::pair{"default", 510u}, std::pair{"high", 766u}, std::pair{"highest", 1150u}}) {
    RunRequest request = oneCore(path);
    request.matmul_precision = precision;
    const RunOutcome outcome = runRequest(request);
    for (const auto& op : mxuOps(outcome)) {
      EXPECT_EQ(op["end_cycle"].get<uint64_t>() - op["start_cycle"].get<uint64_t>(), expected) << precision;
    }
  }
  RunRequest bad = oneCore(path);
  bad.matmul_precision = "extreme";
  try {
    runRequest(bad);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "unknown matmul precision 'extreme' (choose default, high or highest)");
  }
}

}  // namespace
}  // namespace tpusim
