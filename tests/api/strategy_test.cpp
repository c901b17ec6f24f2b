// Strategy names and the slice each one runs on (api/strategy.hpp).
#include <gtest/gtest.h>

#include <functional>

#include "api/strategy.hpp"
#include "sim/common/error.hpp"

namespace tpusim {
namespace {

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidConfig);
    return e.what();
  }
  return "";
}

TEST(Strategy, NamesAreTheShortOnesOrTensorFlowsClassNames) {
  EXPECT_EQ(strategyFromName(""), Strategy::kNone);
  EXPECT_EQ(strategyFromName("mirrored"), Strategy::kMirrored);
  EXPECT_EQ(strategyFromName("MultiWorkerMirroredStrategy"), Strategy::kMultiWorkerMirrored);
  EXPECT_EQ(strategyFromName("TPUStrategy"), Strategy::kTpu);
  EXPECT_EQ(strategyFromName("ps"), Strategy::kParameterServer);
  EXPECT_STREQ(strategyClassName(Strategy::kMultiWorkerMirrored), "MultiWorkerMirroredStrategy");
  EXPECT_EQ(errorOf([] { strategyFromName("central_storage"); }),
            "unknown strategy 'central_storage' (mirrored, multi_worker_mirrored, tpu, ps; docs/strategies.md)");
}

TEST(Strategy, EachRunsOnItsSlice) {
  const HardwareParams hw = HardwareParams::load("tpuv4");  // 4 chips per host, 3d_torus
  const Topology mirrored = *strategySlice(Strategy::kMirrored, "", std::nullopt, hw);
  EXPECT_EQ(mirrored.shapeString(), "2x2x1");
  EXPECT_EQ(mirrored.slices(), 1);
  const Topology workers = *strategySlice(Strategy::kMultiWorkerMirrored, "", 3, hw);
  EXPECT_EQ(workers.shapeString(), "2x2x1");
  EXPECT_EQ(workers.slices(), 3);
  EXPECT_EQ(workers.numChips(), 12);
  EXPECT_EQ(strategySlice(Strategy::kTpu, "4x4x4", std::nullopt, hw)->numChips(), 64);
  EXPECT_FALSE(strategySlice(Strategy::kNone, "", std::nullopt, hw));
  EXPECT_FALSE(strategySlice(Strategy::kParameterServer, "", 8, hw));
}

// The options that do not fit a strategy are api/option_rules.hpp's (OptionRules.*).
TEST(Strategy, ZeroWorkersIsAOneLineError) {
  const HardwareParams hw = HardwareParams::load("tpuv4");
  EXPECT_EQ(errorOf([&] { strategySlice(Strategy::kMultiWorkerMirrored, "", 0, hw); }), "--workers must be > 0");
}

TEST(Strategy, ReportEntryFollowsTensorFlowsDefinitions) {
  program::Program program;
  program.set_batch(32);
  program.set_replicas(8);
  program.set_hosts(2);
  const nlohmann::ordered_json entry = strategyEntry(Strategy::kMultiWorkerMirrored, program);
  EXPECT_EQ(entry["num_replicas_in_sync"], 8);
  EXPECT_EQ(entry["global_batch"], 256);  // 32 per replica x 8 replicas
  EXPECT_EQ(entry["workers"], 2);
  EXPECT_EQ(entry["chips_per_host"], 4);
}

}  // namespace
}  // namespace tpusim
