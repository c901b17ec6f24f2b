// Sweep specs (api/sweep_spec.hpp): the cases in their defined order, the defaults, the
// JSON form, and a malformed spec as one line; and runSweep (api/sweep.hpp): the same rows,
// CSV and JSON from one process and from worker processes, a failing case as a row.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "api/run_options.hpp"
#include "api/sweep.hpp"
#include "api/sweep_spec.hpp"
#include "sim/common/error.hpp"
#include "tests/support/expect_error.hpp"
#include "tests/support/source_dir.hpp"

namespace tpusim {
namespace {

using testing::expectError;

const std::string kTraces = testing::sourceDir() + "/traces";

std::vector<SweepCase> casesOf(const std::string& text) {
  return sweepCases(parseSweepSpec(text, "spec.textproto"), kTraces);
}

std::vector<std::string> labels(const std::vector<SweepCase>& cases) {
  std::vector<std::string> out;
  for (const SweepCase& c : cases) out.push_back(std::to_string(c.index) + " " + c.label());
  return out;
}

TEST(SweepSpec, CasesAreModelsTimesPresetsTimesVariationsTimesStrategiesTheLastFastest) {
  const std::vector<SweepCase> cases = casesOf(R"(
    model: "mlp.onnx"
    model: "dlrm.onnx"
    preset: "tpuv4"
    preset: "tpuv5e"
    variation { }
    variation { set: "mxu.rows=64" set: "mxu.cols=64" }
    strategy { }
    strategy { topology: "2x1x1" tp: 2 }
    mode: "inference"
    batch: 8
  )");
  // 2 models x 2 presets x 2 variations x 2 strategies.
  ASSERT_EQ(cases.size(), 16u);
  EXPECT_EQ(labels(cases)[0], "0 mlp.onnx tpuv4 preset one chip");
  EXPECT_EQ(labels(cases)[1], "1 mlp.onnx tpuv4 preset topology=2x1x1 tp=2");
  EXPECT_EQ(labels(cases)[2], "2 mlp.onnx tpuv4 mxu.rows=64,mxu.cols=64 one chip");
  EXPECT_EQ(labels(cases)[4], "4 mlp.onnx tpuv5e preset one chip");
  EXPECT_EQ(labels(cases)[8], "8 dlrm.onnx tpuv4 preset one chip");
  EXPECT_EQ(labels(cases)[15], "15 dlrm.onnx tpuv5e mxu.rows=64,mxu.cols=64 topology=2x1x1 tp=2");
  const RunRequest& r = cases[15].request;
  EXPECT_EQ(r.model_path, kTraces + "/dlrm.onnx");  // from the spec's folder
  EXPECT_EQ(r.hw, "tpuv5e");
  EXPECT_EQ(r.overrides, (ParamOverrides{{"mxu.rows", "64"}, {"mxu.cols", "64"}}));
  EXPECT_EQ(r.topology, "2x1x1");
  EXPECT_EQ(r.tensor_parallel, 2);
  EXPECT_EQ(r.data_parallel, 0);
  EXPECT_EQ(*r.mode, "inference");
  EXPECT_EQ(*r.batch, 8);
  EXPECT_FALSE(r.instruction_timeline);
  EXPECT_TRUE(cases[0].request.topology.empty());
}

// A spec's run options go into each case's request through the one table of run options
// (api/run_options.hpp): every field of a strategy, and every fixed field but the model's,
// the preset's, the variations', the strategies', mode and batch, is named as a run option of its type.
TEST(SweepSpec, ItsFieldsAreRunOptions) {
  const auto expectOptions = [](const google::protobuf::Descriptor& message, const std::set<std::string>& others) {
    for (int i = 0; i < message.field_count(); ++i) {
      const google::protobuf::FieldDescriptor& field = *message.field(i);
      if (others.count(field.name())) continue;
      const RunOption* option = findRunOption(field.name());
      ASSERT_NE(option, nullptr) << message.name() << "." << field.name();
      const RunOptionType type = runOptionType(*option);
      const bool integer = type == RunOptionType::kInt || type == RunOptionType::kUInt;
      EXPECT_EQ(field.cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_INT64, integer) << field.name();
      EXPECT_EQ(field.cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_STRING, type == RunOptionType::kString)
          << field.name();
    }
  };
  expectOptions(*config::SweepStrategy::descriptor(), {});
  expectOptions(*config::SweepSpec::descriptor(), {"model", "preset", "variation", "strategy", "mode", "batch"});
  const std::vector<SweepCase> cases = casesOf(R"(
    model: "mlp.onnx"
    strategy { topology: "4x1x1" dp: 2 pp: 2 micro_batches: 4 pipeline_schedule: "gpipe" }
    strategy { strategy: "ps" workers: 8 }
    precision: "mixed_bfloat16"
    optimizer: "adam"
  )");
  ASSERT_EQ(cases.size(), 2u);
  const RunRequest& pipeline = cases[0].request;
  EXPECT_EQ(pipeline.data_parallel, 2);
  EXPECT_EQ(pipeline.pipeline_parallel, 2);
  EXPECT_EQ(pipeline.micro_batches, 4);
  EXPECT_EQ(pipeline.pipeline_schedule, "gpipe");
  EXPECT_EQ(pipeline.precision, "mixed_bfloat16");
  EXPECT_EQ(pipeline.optimizer, "adam");
  EXPECT_EQ(cases[1].request.strategy, "ps");
  EXPECT_EQ(cases[1].request.workers, std::optional<uint64_t>(8));
  EXPECT_EQ(cases[1].request.optimizer, "adam");
}

TEST(SweepSpec, DefaultsAreTpuv4ThePresetAsItIsAndOneChip) {
  const std::vector<SweepCase> cases = casesOf("model: \"mlp.onnx\"");
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].label(), "mlp.onnx tpuv4 preset one chip");
  EXPECT_FALSE(cases[0].request.batch.has_value());
  EXPECT_FALSE(cases[0].request.mode.has_value());
  EXPECT_EQ(cases[0].request.precision, "float32");
}

TEST(SweepSpec, TheJsonFormIsTheSameSpec) {
  const config::SweepSpec json = sweepSpecFromJson(
      R"({"model": ["mlp.onnx"], "preset": ["tpuv5e"], "variation": [{"set": ["mxu.rows=64"]}],
          "strategy": [{"topology": "2x1x1", "dp": 2}], "batch": 4})");
  EXPECT_EQ(labels(sweepCases(json, kTraces)),
            labels(casesOf(R"(model: "mlp.onnx" preset: "tpuv5e" variation { set: "mxu.rows=64" }
                              strategy { topology: "2x1x1" dp: 2 } batch: 4)")));
  expectError([] { sweepSpecFromJson(R"({"models": ["mlp.onnx"]})"); }, ErrorKind::kInvalidConfig, "sweep spec: ");
}

TEST(SweepSpec, AMalformedSpecIsOneLineWithItsPlace) {
  expectError([] { casesOf("model: \"mlp.onnx\"\nmodle: \"x\""); }, ErrorKind::kInvalidConfig, "spec.textproto:2:");
  expectError([] { casesOf("model: \"mlp.onnx\"\nmodle: \"x\""); }, ErrorKind::kInvalidConfig, "modle");
  expectError([] { casesOf("model: \"mlp.onnx\" batch: \"eight\""); }, ErrorKind::kInvalidConfig, "spec.textproto:1:");
  expectError([] { casesOf("preset: \"tpuv4\""); }, ErrorKind::kInvalidConfig, "sweep spec: no model");
  expectError([] { casesOf("model: \"nothere.onnx\""); }, ErrorKind::kInvalidInput,
              "model file '" + kTraces + "/nothere.onnx' does not exist");
  expectError([] { casesOf("model: \"mlp.onnx\" model: \"mlp.onnx\""); }, ErrorKind::kInvalidConfig,
              "model lists mlp.onnx twice");
  expectError([] { casesOf("model: \"mlp.onnx\" preset: \"tpuv9\""); }, ErrorKind::kInvalidConfig,
              "sweep spec: preset tpuv9: ");
  expectError([] { casesOf("model: \"mlp.onnx\" variation { set: \"mxu.rowz=64\" }"); }, ErrorKind::kInvalidConfig,
              "variation 0 on preset tpuv4: ");
  expectError([] { casesOf("model: \"mlp.onnx\" variation { set: \"mxu.rowz=64\" }"); }, ErrorKind::kInvalidConfig,
              "mxu.rows");  // the closest name
  expectError([] { casesOf("model: \"mlp.onnx\" variation { set: \"mxu.rows\" }"); }, ErrorKind::kInvalidConfig,
              "variation 0: --set expects key=value");
  expectError([] { casesOf("model: \"mlp.onnx\" variation { } variation { }"); }, ErrorKind::kInvalidConfig,
              "variation lists {} twice");
  expectError([] { casesOf("model: \"mlp.onnx\" strategy { tp: 2 }"); }, ErrorKind::kInvalidConfig,
              "strategy 0 (tp=2): dp, tp and pp need a topology");
  expectError([] { casesOf("model: \"mlp.onnx\" strategy { strategy: \"hogwild\" }"); }, ErrorKind::kInvalidConfig,
              "strategy 0 (strategy=hogwild): ");
  expectError([] { casesOf("model: \"mlp.onnx\" mode: \"eval\""); }, ErrorKind::kInvalidConfig,
              "mode must be training or inference, not 'eval'");
  expectError([] { casesOf("model: \"mlp.onnx\" batch: 0"); }, ErrorKind::kInvalidConfig, "batch must be > 0");
  expectError([] { casesOf("model: \"mlp.onnx\" precision: \"fp8\""); }, ErrorKind::kInvalidConfig, "sweep spec: ");
}

TEST(SweepSpec, AFileThatCannotBeOpenedIsAnError) {
  expectError([] { readSweepSpec("/nonexistent/sweep.textproto"); }, ErrorKind::kInvalidInput,
              "cannot open sweep spec '/nonexistent/sweep.textproto'");
}

// Two real MLP steps and one that fails (tp 2 on one chip's slice cannot split a 1x1x1):
// the rows from one process and from two worker processes are the same bytes.
TEST(Sweep, WorkerProcessesGiveTheSameRowsAsOneProcess) {
  const std::vector<SweepCase> cases = casesOf(R"(
    model: "mlp.onnx"
    preset: "tpuv5e"
    variation { }
    variation { set: "mxu.rows=64" }
    strategy { }
    strategy { topology: "1x1x1" tp: 2 }
    batch: 8
  )");
  ASSERT_EQ(cases.size(), 4u);
  const std::optional<SweepResult> one = runSweep(cases, LocalCaseRunner(1), true);
  size_t told = 0;
  const std::optional<SweepResult> two =
      runSweep(cases, LocalCaseRunner(2), true, [&](const nlohmann::ordered_json&, size_t total) {
        EXPECT_EQ(total, 4u);
        ++told;
      });
  ASSERT_TRUE(one && two);
  EXPECT_EQ(told, 4u);
  EXPECT_EQ(sweepJson(*one).dump(), sweepJson(*two).dump());
  EXPECT_EQ(sweepCsv(*one), sweepCsv(*two));
  EXPECT_EQ(one->reports, two->reports);
  EXPECT_EQ(one->failed(), 2u);
  const nlohmann::ordered_json& ok = one->rows[0];
  EXPECT_EQ(ok.at("status"), "ok");
  EXPECT_TRUE(ok.at("error").is_null());
  const nlohmann::ordered_json report = nlohmann::ordered_json::parse(one->reports[0]);
  EXPECT_EQ(ok.at("step_cycles"), report.at("total_cycles"));
  EXPECT_EQ(ok.at("step_time_s"), report.at("step_time_s"));
  EXPECT_EQ(ok.at("hbm_peak_bytes"), report.at("memory").at("peak_bytes"));
  EXPECT_TRUE(report.at("ops").empty());  // no instruction list
  // The variation is applied: 64 rows change the step's cycles.
  EXPECT_EQ(one->rows[2].at("sets"), nlohmann::ordered_json::array({"mxu.rows=64"}));
  EXPECT_NE(one->rows[2].at("step_cycles"), ok.at("step_cycles"));
  const nlohmann::ordered_json& failed = one->rows[1];
  EXPECT_EQ(failed.at("status"), "error");
  EXPECT_TRUE(failed.at("step_cycles").is_null());
  EXPECT_EQ(failed.at("error").get<std::string>().rfind("invalid configuration: ", 0), 0u) << failed.at("error");
  EXPECT_TRUE(one->reports[1].empty());
  // The CSV: a header and a row per case, the failing one with its error and no figures.
  const std::string csv = sweepCsv(*one);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "index,model,preset,sets,strategy,status,step_cycles,step_time_s,mfu,mxu_utilization,busiest_unit,"
            "busiest_utilization,hbm_peak_bytes,hbm_bandwidth_utilization,error");
  EXPECT_NE(
      csv.find(
          "\n1,\"mlp.onnx\",\"tpuv5e\",\"preset\",\"topology=1x1x1 tp=2\",error,,,,,,,,,\"invalid configuration: "),
      std::string::npos)
      << csv;
}

TEST(Sweep, CaseDirectoriesAreNumberedWithAtLeastFourDigits) {
  EXPECT_EQ(caseDirectory(7, 16), "cases/0007");
  EXPECT_EQ(caseDirectory(12345, 20000), "cases/12345");
  EXPECT_EQ(caseDirectory(3, 100000), "cases/00003");  // 99999 is the last
  EXPECT_EQ(caseDirectory(3, 100001), "cases/000003");
}

}  // namespace
}  // namespace tpusim
