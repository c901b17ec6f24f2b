#include "report/compare.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "api/compare_run.hpp"
#include "report/compare_format.hpp"
#include "sim/common/error.hpp"

namespace tpusim {
namespace {

using Json = nlohmann::ordered_json;

Json simReport() {
  return Json::parse(R"({"kind": "simulation", "model": "m.onnx", "hw": "tpuv4", "mode": "training", "batch": 8,
    "total_cycles": 3000, "clock_hz": 1e9, "step_time_s": 3e-6,
    "per_op": [{"op": "a", "type": "MatMul", "bound_cycles": 2000, "flops": 64, "hbm_bytes": 96},
               {"op": "fused,b", "type": "Add", "bound_cycles": 0, "flops": 4, "hbm_bytes": 8},
               {"op": "c", "type": "Relu", "bound_cycles": 500, "flops": 4, "hbm_bytes": 8}],
    "functional": {"dataflow": "weight_stationary", "rows": 128, "matmul_precision": "default", "seed": 3}})");
}

Json refReport() {
  return Json::parse(R"({"kind": "reference", "backend": "cpu", "device": "host CPU", "model": "m.onnx",
    "hw": "tpuv4", "mode": "training", "batch": 8, "numerics": "reference", "seed": 3,
    "timing": {"warmup": 1, "repeats": 5}, "step_time_s": 0.009,
    "per_op": [{"op": "a", "type": "MatMul", "time_s": 0.004}, {"op": "fused,b", "type": "Add", "time_s": 0.001},
               {"op": "d", "type": "Transpose", "time_s": 0.004}]})");
}

void expectInvalid(const Json& sim, const Json& ref, const std::string& text) {
  try {
    checkComparable(sim, ref);
    FAIL() << "accepted: " << text;
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(error.what()).find(text), std::string::npos) << error.what();
  }
}

TEST(Compare, JoinsPerOpRowsByNameAndListsOneSidedOps) {
  const Json c = buildComparison(simReport(), refReport(), Json());
  ASSERT_EQ(c["per_op"].size(), 4u);  // a, fused b and c from the simulation, then d from the reference only
  const Json& a = c["per_op"][0];
  EXPECT_EQ(a["status"], "matched");
  EXPECT_DOUBLE_EQ(a["sim_time_s"].get<double>(), 2e-6);  // 2000 cycles at 1 GHz
  EXPECT_DOUBLE_EQ(a["ratio"].get<double>(), 2000.0);     // 4 ms measured / 2 us simulated
  EXPECT_EQ(a["flops"], 64);
  EXPECT_EQ(a["hbm_bytes"], 96);
  EXPECT_TRUE(c["per_op"][1]["ratio"].is_null());  // no simulated cycles: no ratio
  EXPECT_EQ(c["per_op"][2]["status"], "simulator only");
  EXPECT_TRUE(c["per_op"][2]["ref_time_s"].is_null());
  EXPECT_EQ(c["per_op"][3]["status"], "reference only");
  EXPECT_TRUE(c["per_op"][3]["sim_cycles"].is_null());
  const Json& s = c["per_op_summary"];
  EXPECT_EQ(s["matched"], 2);
  EXPECT_EQ(s["simulator_only"], 1);
  EXPECT_EQ(s["reference_only"], 1);
  EXPECT_DOUBLE_EQ(s["matched_ratio"].get<double>(), 2500.0);    // (4 + 1) ms / 2 us
  EXPECT_DOUBLE_EQ(c["step_time_ratio"].get<double>(), 3000.0);  // 9 ms / 3 us
  EXPECT_TRUE(c["numerics"].is_null());
  EXPECT_NE(comparisonText(c).find("numerics     none"), std::string::npos);
}

TEST(Compare, CsvQuotesNamesAndLeavesMissingCellsEmpty) {
  const Json c = buildComparison(simReport(), refReport(), Json::array());
  const std::string csv = perOpCsv(c);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "op,type,status,sim_cycles,sim_time_s,ref_time_s,ratio,flops,hbm_bytes,ref_kernel");
  EXPECT_NE(csv.find("\n\"fused,b\",Add,matched,0,0.0,0.001,,4,8,\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nd,Transpose,reference only,,,0.004,,,,\n"), std::string::npos) << csv;
  EXPECT_EQ(
      numericsCsv(c),
      "output,op,status,precision,elements,max_abs_error,max_rel_error,normwise_rel_error,nonfinite_mismatches\n");
}

TEST(Compare, OutputErrorsAreMaxAbsoluteRelativeAndNormwise) {
  // |1.5-1| = 0.5 (rel 0.5), |-2.25+2| = 0.25 (rel 0.125), |0.1-0| = 0.1 (ref 0: no rel);
  // max|ref| = 2, so normwise 0.5 / 2 = 0.25.
  const std::vector<double> sim = {1.5, -2.25, 0.1};
  const std::vector<double> ref = {1.0, -2.0, 0.0};
  const OutputErrors e = outputErrors(sim, ref);
  EXPECT_EQ(e.elements, 3u);
  EXPECT_DOUBLE_EQ(e.max_abs_error, 0.5);
  EXPECT_DOUBLE_EQ(e.max_rel_error, 0.5);
  EXPECT_DOUBLE_EQ(e.normwise_rel_error, 0.25);
  EXPECT_EQ(e.nonfinite_mismatches, 0u);
  const OutputErrors same = outputErrors(ref, ref);
  EXPECT_EQ(same.max_abs_error, 0.0);
  EXPECT_EQ(same.normwise_rel_error, 0.0);
}

TEST(Compare, NonFiniteValuesCountAsMismatchesUnlessBothAgree) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::vector<double> sim = {nan, inf, nan, 1.0};
  const std::vector<double> ref = {nan, inf, 2.0, -inf};
  const OutputErrors e = outputErrors(sim, ref);
  EXPECT_EQ(e.nonfinite_mismatches, 2u);
  EXPECT_EQ(e.max_abs_error, 0.0);
}

TEST(Compare, RejectsReportsOfTheWrongKindOrOfDifferentSteps) {
  expectInvalid(refReport(), refReport(), "the first report has kind 'reference', expected 'simulation'");
  expectInvalid(simReport(), simReport(), "the second report has kind 'simulation', expected 'reference'");
  Json no_kind = simReport();
  no_kind.erase("kind");
  expectInvalid(no_kind, refReport(), "kind '(none)'");
  expectInvalid(Json::array(), refReport(), "kind '(none)'");
  Json batch = refReport();
  batch["batch"] = 16;
  expectInvalid(simReport(), batch, "different steps: batch 8 (simulation) against 16 (reference)");
  Json model = refReport();
  model["model"] = "other.onnx";
  expectInvalid(simReport(), model, "model \"m.onnx\" (simulation) against \"other.onnx\"");
  Json mode = refReport();
  mode["mode"] = "inference";
  expectInvalid(simReport(), mode, "mode");
  Json seed = refReport();
  seed["seed"] = 4;
  expectInvalid(simReport(), seed, "inputs differ: seed 3 (simulation) against 4 (reference)");
  Json missing = refReport();
  missing.erase("batch");
  expectInvalid(simReport(), missing, "the reference report has no 'batch'");
  Json twice = refReport();
  twice["per_op"].push_back(twice["per_op"][0]);
  EXPECT_THROW(buildComparison(simReport(), twice, Json()), Error);
}

TEST(Compare, NumericsAreSummedUpPerPrecision) {
  const Json rows = Json::array(
      {numericsRow("y", "a", "f32", outputErrors(std::vector<double>{1.5}, std::vector<double>{1.0})),
       numericsRow("z", "c", "bf16", outputErrors(std::vector<double>{2.0}, std::vector<double>{2.0})),
       numericsRow("w", "c", "f32", outputErrors(std::vector<double>{4.0, 1.0}, std::vector<double>{4.0, 2.0})),
       numericsOneSidedRow("v", "d", "f32", "reference only")});
  const Json groups = buildComparison(simReport(), refReport(), rows)["numerics"]["by_precision"];
  ASSERT_EQ(groups.size(), 2u);  // f32 first: the first row's
  EXPECT_EQ(groups[0]["precision"], "f32");
  EXPECT_EQ(groups[0]["outputs"], 2);               // the one-sided row is not an error figure
  EXPECT_EQ(groups[0]["max_abs_error"], 1.0);       // w: |1 - 2|
  EXPECT_EQ(groups[0]["max_rel_error"], 0.5);       // y: 0.5 / 1, w: 1 / 2
  EXPECT_EQ(groups[0]["normwise_rel_error"], 0.5);  // y: 0.5 / 1; w: 1 / 4
  EXPECT_EQ(groups[1]["precision"], "bf16");
  EXPECT_EQ(groups[1]["max_abs_error"], 0.0);
}

TEST(Compare, NamesTheGpuLibrariesWhereTheReferenceRecordsThem) {
  EXPECT_EQ(comparisonText(buildComparison(simReport(), refReport(), Json())).find("libraries"), std::string::npos);
  Json ref = refReport();
  ref["backend"] = "cuda";
  ref["device_libraries"] = "driver 13.0, runtime 13.0, cuBLAS 13.0.2, cuDNN 9.19.0, NCCL 2.28.3";
  const Json c = buildComparison(simReport(), ref, Json());
  EXPECT_EQ(c["reference"]["device_libraries"], ref["device_libraries"]);
  EXPECT_NE(
      comparisonText(c).find("libraries    driver 13.0, runtime 13.0, cuBLAS 13.0.2, cuDNN 9.19.0, NCCL 2.28.3\n"),
      std::string::npos);
}

// A CUDA reference's per_op rows say what ran each op: the comparison carries it (ref_kernel) and
// the text table gains a last column; a CPU reference's rows have none, and the table no column.
TEST(Compare, CarriesWhatRanEachOpWhereTheReferenceSaysIt) {
  const Json plain = buildComparison(simReport(), refReport(), Json());
  EXPECT_TRUE(plain["per_op"][0]["ref_kernel"].is_null());
  EXPECT_EQ(comparisonText(plain).find("ran as"), std::string::npos);
  Json ref = refReport();
  ref["backend"] = "cuda";
  ref["per_op"][0]["kernel"] = "cuBLAS cublasSgemmStridedBatched (pedantic math: no TF32)";
  ref["per_op"][2]["kernel"] = "tpusim kernel";
  const Json c = buildComparison(simReport(), ref, Json());
  EXPECT_EQ(c["per_op"][0]["ref_kernel"], "cuBLAS cublasSgemmStridedBatched (pedantic math: no TF32)");
  EXPECT_TRUE(c["per_op"][1]["ref_kernel"].is_null());       // the reference row has no kernel
  EXPECT_EQ(c["per_op"][3]["ref_kernel"], "tpusim kernel");  // d: the reference's only
  const std::string text = comparisonText(c);
  EXPECT_NE(text.find("hbm bytes  ran as\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  cuBLAS cublasSgemmStridedBatched (pedantic math: no TF32)\n"), std::string::npos) << text;
  const std::string csv = perOpCsv(c);
  EXPECT_NE(csv.find(",cuBLAS cublasSgemmStridedBatched (pedantic math: no TF32)\n"), std::string::npos) << csv;
}

TEST(Compare, SameReportsGiveTheSameText) {
  const Json rows =
      Json::array({numericsRow("y", "a", "f32", outputErrors(std::vector<double>{1.0}, std::vector<double>{1.0}))});
  EXPECT_EQ(buildComparison(simReport(), refReport(), rows).dump(),
            buildComparison(simReport(), refReport(), rows).dump());
  const std::string text = comparisonText(buildComparison(simReport(), refReport(), rows));
  EXPECT_NE(text.find("simulator: mxu (weight_stationary dataflow, 128 rows, matmul precision default)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("reference: reference (each op's kernels in its dtype); seed 3"), std::string::npos) << text;
}

// Found by fuzz/report_fuzz (docs/reliability.md, "Fuzzing"), its input committed: a report
// with a number too large for a double (1e308800). nlohmann::json throws out_of_range for it,
// not parse_error, so it escaped readReportJson and `tpusim compare` called it an internal error.
TEST(Compare, AReportWithANumberTooLargeIsInvalidInput) {
  const std::string path = std::string(TPUSIM_SOURCE_DIR) + "/tests/data/fuzz/report_number_overflow.json";
  try {
    compareReportFiles(path, path);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(error.what()).find("is not valid JSON ([json.exception.out_of_range.406] number overflow"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace tpusim
