// The files beside report.json: utilization windows, CSVs, trace.json, the roofline and
// the verdict, on small reports whose figures are worked out by hand, and on the MLP.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include "api/session.hpp"
#include "report/bottleneck.hpp"
#include "report/compare.hpp"
#include "report/csv_tables.hpp"
#include "report/html_report.hpp"
#include "report/memory_timeline.hpp"
#include "report/roofline.hpp"
#include "report/run_outputs.hpp"
#include "report/trace_events.hpp"
#include "report/utilization_windows.hpp"
#include "sim/common/error.hpp"

namespace tpusim {
namespace {

using Json = nlohmann::ordered_json;

Json op(const std::string& name, const std::string& unit, uint64_t start, uint64_t end) {
  return {{"name", name},
          {"type", "MatMul"},
          {"op", "/mm"},
          {"unit", unit},
          {"unit_kind", unit.find("dma") != std::string::npos ? "dma" : "mxu"},
          {"start_cycle", start},
          {"end_cycle", end},
          {"flops", 10},
          {"bytes", 20}};
}

// Two execution units on chip0 and one on chip1; HBM counts no instructions.
Json smallReport(uint64_t total_cycles, Json ops) {
  Json report;
  report["total_cycles"] = total_cycles;
  report["clock_hz"] = 1e9;
  report["units"] = {{"chip0.core0.mxu0", {{"instructions", 0}, {"busy_cycles", 0}, {"utilization", 0.0}}},
                     {"chip0.core0.dma0", {{"instructions", 0}, {"busy_cycles", 0}, {"utilization", 0.0}}},
                     {"chip0.hbm", {{"busy_cycles", 0}, {"utilization", 0.0}}},
                     {"chip1.core0.mxu0", {{"instructions", 0}, {"busy_cycles", 0}, {"utilization", 0.0}}}};
  report["ops"] = std::move(ops);
  return report;
}

const RunOutcome& mlp() {
  static const RunOutcome outcome = [] {
    RunRequest request;
    request.model_path = TPUSIM_SOURCE_DIR "/traces/mlp.onnx";
    request.hw = "tpuv4";
    return runRequest(request);
  }();
  return outcome;
}

TEST(UtilizationWindows, SplitsSpansOverWindowsOfTheRule) {
  // 1000 cycles: min(100, 1000) = 100 windows of ceil(1000 / 100) = 10 cycles.
  // The MXU's [5, 25) puts 5, 10 and 5 cycles in windows 0, 1, 2.
  const UtilizationWindows w = utilizationWindows(smallReport(1000, {op("a", "chip0.core0.mxu0", 5, 25)}));
  EXPECT_EQ(w.window_cycles, 10u);
  ASSERT_EQ(w.windows(), 100u);
  ASSERT_EQ(w.units, (std::vector<std::string>{"chip0.core0.mxu0", "chip0.core0.dma0", "chip1.core0.mxu0"}));
  EXPECT_EQ(w.busy[0][0], 5u);
  EXPECT_EQ(w.busy[0][1], 10u);
  EXPECT_EQ(w.busy[0][2], 5u);
  EXPECT_EQ(w.busy[0][3], 0u);
  EXPECT_DOUBLE_EQ(w.utilization(0, 0), 0.5);
}

TEST(UtilizationWindows, LastWindowIsShorterAndOverlapsCountOnce) {
  // 250 cycles: 100 windows of ceil(2.5) = 3 cycles would end at 300, so ceil(250 / 3) = 84
  // windows, the last [249, 250) one cycle long. The DMA's [0, 60) and [30, 90) overlap:
  // busy [0, 90) = 90 cycles, as busy_cycles counts a DMA engine.
  const UtilizationWindows w =
      utilizationWindows(smallReport(250, {op("a", "chip0.core0.dma0", 0, 60), op("b", "chip0.core0.dma0", 30, 90),
                                           op("c", "chip0.core0.mxu0", 240, 250)}));
  EXPECT_EQ(w.window_cycles, 3u);
  ASSERT_EQ(w.windows(), 84u);
  EXPECT_EQ(w.windowStart(83), 249u);
  EXPECT_EQ(w.windowEnd(83), 250u);
  EXPECT_DOUBLE_EQ(w.utilization(0, 83), 1.0);
  uint64_t dma = 0;
  for (uint64_t busy : w.busy[1]) dma += busy;
  EXPECT_EQ(dma, 90u);
  EXPECT_EQ(w.busy[1][29], 3u);  // [87, 90)
  EXPECT_EQ(w.busy[1][30], 0u);
}

TEST(UtilizationWindows, ShortStepsGetOneCycleWindows) {
  const UtilizationWindows w = utilizationWindows(smallReport(7, {op("a", "chip0.core0.mxu0", 2, 4)}));
  EXPECT_EQ(w.window_cycles, 1u);
  EXPECT_EQ(w.windows(), 7u);
  EXPECT_EQ(w.busy[0], (std::vector<uint64_t>{0, 0, 1, 1, 0, 0, 0}));
}

TEST(UtilizationWindows, WindowsAddUpToEachUnitsBusyCycles) {
  const Json& report = mlp().report;
  const UtilizationWindows w = utilizationWindows(report);
  ASSERT_FALSE(w.units.empty());
  for (size_t u = 0; u < w.units.size(); ++u) {
    uint64_t busy = 0;
    for (uint64_t cycles : w.busy[u]) busy += cycles;
    EXPECT_EQ(busy, report["units"][w.units[u]]["busy_cycles"].get<uint64_t>()) << w.units[u];
  }
}

TEST(UtilizationWindows, RejectsOpsOnUnknownUnitsAndPastTheStep) {
  EXPECT_THROW(utilizationWindows(smallReport(100, {op("a", "chip0.core9.mxu0", 0, 5)})), Error);
  EXPECT_THROW(utilizationWindows(smallReport(100, {op("a", "chip0.core0.mxu0", 0, 101)})), Error);
}

TEST(CsvTables, UnionOfColumnsAndQuoting) {
  const Json rows = Json::array({{{"op", "a,b"}, {"x", 1}}, {{"op", "say \"hi\""}, {"y", 0.5}}});
  EXPECT_EQ(objectsCsv(rows), "op,x,y\n\"a,b\",1,\n\"say \"\"hi\"\"\",,0.5\n");
  const Json units = {{"u0", {{"busy", 3}}}, {"u1", {{"busy", 4}, {"bytes", 8}}}};
  EXPECT_EQ(objectsCsv(units, "unit"), "unit,busy,bytes\nu0,3,\nu1,4,8\n");
}

TEST(CsvTables, TimelineHasOneRowPerWindowAndAColumnPerUnit) {
  const UtilizationWindows w = utilizationWindows(smallReport(1000, {op("a", "chip0.core0.mxu0", 5, 25)}));
  const std::string csv = timelineCsv(w, 1e9);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "window,start_cycle,end_cycle,start_s,chip0.core0.mxu0,chip0.core0.dma0,chip1.core0.mxu0");
  EXPECT_NE(csv.find("\n1,10,20,1e-08,1.0,0.0,0.0\n"), std::string::npos) << csv.substr(0, 200);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 101);
}

TEST(TraceEvents, OneProcessPerChipOneTrackPerUnitAndLanesForOverlaps) {
  const Json trace =
      Json::parse(traceJson(smallReport(100, {op("a", "chip0.core0.dma0", 0, 60), op("b", "chip0.core0.dma0", 30, 90),
                                              op("c", "chip1.core0.mxu0", 10, 20)})));
  std::map<std::pair<int, int>, std::string> threads;
  std::map<int, std::string> processes;
  std::vector<Json> slices;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] == "M" && event["name"] == "thread_name") {
      threads[{event["pid"].get<int>(), event["tid"].get<int>()}] = event["args"]["name"].get<std::string>();
    }
    if (event["ph"] == "M" && event["name"] == "process_name") {
      processes[event["pid"].get<int>()] = event["args"]["name"].get<std::string>();
    }
    if (event["ph"] == "X") slices.push_back(event);
  }
  EXPECT_EQ(processes, (std::map<int, std::string>{{0, "chip0"}, {1, "chip1"}}));
  // mxu0 and dma0 of chip0 (dma0 with a second lane for b), mxu0 of chip1.
  EXPECT_EQ(threads, (std::map<std::pair<int, int>, std::string>{{{0, 1}, "chip0.core0.mxu0"},
                                                                 {{0, 2}, "chip0.core0.dma0"},
                                                                 {{0, 3}, "chip0.core0.dma0 #1"},
                                                                 {{1, 4}, "chip1.core0.mxu0"}}));
  ASSERT_EQ(slices.size(), 3u);
  EXPECT_EQ(slices[0]["tid"], 2);
  EXPECT_EQ(slices[1]["tid"], 3);
  EXPECT_EQ(slices[2]["pid"], 1);
  // 1 GHz: cycle 30 is 0.03 us, 60 cycles 0.06 us.
  EXPECT_DOUBLE_EQ(slices[1]["ts"].get<double>(), 0.03);
  EXPECT_DOUBLE_EQ(slices[1]["dur"].get<double>(), 0.06);
  EXPECT_EQ(slices[1]["args"]["instruction"], "b");
  EXPECT_EQ(slices[1]["args"]["bytes"], 20);
}

TEST(TraceEvents, MlpTracksHoldDisjointSlicesOfEveryInstruction) {
  const Json& report = mlp().report;
  const Json trace = Json::parse(traceJson(report));
  const double clock = report["clock_hz"].get<double>();
  std::set<std::pair<int, int>> named;
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> tracks;
  size_t slices = 0;
  for (const auto& event : trace["traceEvents"]) {
    for (const char* field : {"name", "ph", "pid", "tid"}) ASSERT_TRUE(event.contains(field)) << event.dump();
    const std::pair<int, int> track{event["pid"].get<int>(), event["tid"].get<int>()};
    if (event["ph"] == "M") {
      if (event["name"] == "thread_name") named.insert(track);
      continue;
    }
    if (event["ph"] == "C") continue;  // HBM held, checked in tests/e2e/test_report_views.py
    ASSERT_EQ(event["ph"], "X");
    ASSERT_TRUE(event["args"].contains("op") && event["args"].contains("flops") && event["args"].contains("bytes"));
    EXPECT_DOUBLE_EQ(event["ts"].get<double>(), event["args"]["start_cycle"].get<double>() * 1e6 / clock);
    tracks[track].emplace_back(event["ts"].get<double>(), event["ts"].get<double>() + event["dur"].get<double>());
    ++slices;
  }
  EXPECT_EQ(slices, report["ops"].size());
  for (auto& [track, spans] : tracks) {
    EXPECT_TRUE(named.count(track)) << track.first << "/" << track.second;
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i) EXPECT_LE(spans[i - 1].second, spans[i].first + 1e-9);
  }
}

TEST(Roofline, TpuV4PeaksAndTheMlpIsHbmBound) {
  // tpuv4: 2 cores x 4 MXUs x 128 x 128 PEs x 2 flops x 1050 MHz = 275.25 TFLOP/s (Google's
  // published 275 TFLOP/s bf16 per v4 chip) over 1200 GB/s HBM: ridge 229.4 flops per byte.
  const Json& report = mlp().report;
  const Roofline roofline = rooflineOf(report);
  EXPECT_DOUBLE_EQ(roofline.mxu_flops_per_s, 2.0 * 2 * 4 * 128 * 128 * 1050e6);
  EXPECT_DOUBLE_EQ(roofline.hbm_bytes_per_s, 1200e9);
  EXPECT_NEAR(roofline.ridge, 229.376, 1e-9);
  EXPECT_DOUBLE_EQ(roofline.attainable(1.0), 1200e9);
  EXPECT_DOUBLE_EQ(roofline.attainable(1e6), roofline.mxu_flops_per_s);
  uint64_t flops = 0;
  for (const auto& entry : report["per_op"]) flops += entry["flops"].get<uint64_t>();
  EXPECT_EQ(roofline.step.flops, flops);
  const uint64_t hbm = report["hbm"]["bytes_read"].get<uint64_t>() + report["hbm"]["bytes_written"].get<uint64_t>();
  EXPECT_DOUBLE_EQ(roofline.step.intensity, static_cast<double>(flops) / static_cast<double>(hbm));
  EXPECT_EQ(roofline.ops.size() + roofline.ops_without_flops + roofline.ops_without_hbm_bytes, report["per_op"].size());
  for (const RooflinePoint& point : roofline.ops) {
    // No op runs faster than the roofline allows at its intensity... except by reusing bytes
    // it does not count (none here: every op's operands come from HBM in this step).
    EXPECT_LE(point.flops_per_s, roofline.attainable(point.intensity) * (1 + 1e-9)) << point.op;
  }
  const BottleneckVerdict verdict = bottleneckVerdict(report, roofline);
  EXPECT_TRUE(verdict.hbm_bound);
  EXPECT_EQ(verdict.headline.rfind("HBM-bound by the roofline", 0), 0u) << verdict.headline;
  EXPECT_EQ(verdict.busiest_unit, "chip0.hbm");
  EXPECT_GE(verdict.evidence.size(), 5u);
}

TEST(Roofline, NoHbmTrafficIsComputeBound) {
  Json report = mlp().report;
  report["hbm"]["bytes_read"] = 0;
  report["hbm"]["bytes_written"] = 0;
  const BottleneckVerdict verdict = bottleneckVerdict(report, rooflineOf(report));
  EXPECT_FALSE(verdict.hbm_bound);
  EXPECT_EQ(verdict.headline.rfind("Compute-bound: the step moves no bytes", 0), 0u) << verdict.headline;
}

TEST(ReportHtml, SelfContainedAndNamesCannotCloseTheScript) {
  Json report = mlp().report;
  const std::string clean = reportHtml(report);
  for (const char* fetch : {"src=", "href=", "<link", "@import", "url(", "https://"}) {
    EXPECT_EQ(clean.find(fetch), std::string::npos) << fetch;
  }
  report["per_op"][0]["op"] = "</script><img src=x>";
  const std::string page = reportHtml(report);
  EXPECT_EQ(page.find("<img"), std::string::npos);
  size_t closes = 0;
  for (size_t at = page.find("</script>"); at != std::string::npos; at = page.find("</script>", at + 1)) ++closes;
  EXPECT_EQ(closes, 2u);  // the data's and the script's
  for (const char* id : {"verdict", "utilization-plot", "roofline-plot", "per-op-table", "layers-table", "memory-plot",
                         "interconnect-plot"}) {
    EXPECT_NE(page.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  }
}

// A reference report of the MLP's step with a measured time for each simulated op but the
// last, and one op of its own.
Json referenceOf(const Json& sim) {
  Json ref = {{"kind", "reference"},   {"backend", "cpu"},        {"device", "host CPU"},
              {"model", sim["model"]}, {"hw", sim["hw"]},         {"mode", sim["mode"]},
              {"batch", sim["batch"]}, {"numerics", "reference"}, {"timing", {{"method", "wall clock"}}},
              {"step_time_s", 0.01}};
  ref["per_op"] = Json::array();
  for (size_t i = 0; i + 1 < sim["per_op"].size(); ++i) {
    ref["per_op"].push_back({{"op", sim["per_op"][i]["op"]}, {"type", sim["per_op"][i]["type"]}, {"time_s", 1e-4}});
  }
  ref["per_op"].push_back({{"op", "reference.only"}, {"type", "Transpose"}, {"time_s", 1e-5}});
  return ref;
}

TEST(ReportHtml, ComparisonSectionsOnlyWithAComparison) {
  const Json& report = mlp().report;
  EXPECT_TRUE(reportPageData(report)["compare"].is_null());
  EXPECT_EQ(reportHtml(report).find("id=\"compare-plot\""), std::string::npos);
  const Json comparison = buildComparison(report, referenceOf(report), Json());
  const Json data = reportPageData(report, comparison)["compare"];
  ASSERT_FALSE(data.is_null());
  EXPECT_EQ(data["per_op"].size(), report["per_op"].size() + 1);
  EXPECT_EQ(data["summary"]["simulator_only"], 1);
  EXPECT_EQ(data["summary"]["reference_only"], 1);
  EXPECT_EQ(data["reference_numerics"], "reference");
  EXPECT_TRUE(data["numerics"].is_null());  // the simulation ran without --functional
  const std::string page = reportHtml(report, comparison);
  for (const char* id : {"compare-plot", "compare-table", "numerics-table"}) {
    EXPECT_NE(page.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  }
  // A comparison of another run's step is refused, naming what differs.
  Json other = report;
  other["batch"] = report["batch"].get<uint64_t>() * 2;
  try {
    reportPageData(other, comparison);
    FAIL() << "accepted a comparison of another batch";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(error.what()).find("batch"), std::string::npos) << error.what();
  }
  EXPECT_THROW(reportPageData(report, Json{{"kind", "simulation"}}), Error);
}

TEST(ReportHtml, LinksOnlyWithAnInterconnectSection) {
  Json report = mlp().report;
  EXPECT_TRUE(reportPageData(report)["interconnect"].is_null());
  report["interconnect"]["links"] =
      Json::array({{{"src", 0}, {"dst", 1}, {"dim", 0}, {"bytes", 100}, {"busy_cycles", 50}, {"utilization", 0.25}}});
  const Json links = reportPageData(report)["interconnect"];
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0]["utilization"], 0.25);
  report["interconnect"]["links"][0].erase("dst");
  EXPECT_THROW(reportPageData(report), nlohmann::json::exception);
}

class RunDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = std::filesystem::path(::testing::TempDir()) /
          ("tpusim_views_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  void write(const std::string& text) { std::ofstream(dir / "report.json") << text; }
  std::filesystem::path dir;
};

std::string errorOf(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kInvalidInput);
    return error.what();
  }
  return "(no error)";
}

TEST_F(RunDir, ReadingReportsOneLineErrors) {
  EXPECT_NE(errorOf([&] { readRunReport((dir / "absent").string()); }).find("does not exist"), std::string::npos);
  EXPECT_NE(errorOf([&] { readRunReport(dir.string()); }).find("has no report.json"), std::string::npos);
  write("{\"schema_version\": 1,");
  EXPECT_NE(errorOf([&] { readRunReport(dir.string()); }).find("is not valid JSON"), std::string::npos);
  write("[1, 2]");
  EXPECT_NE(errorOf([&] { readRunReport(dir.string()); }).find("has no schema_version"), std::string::npos);
  write("{\"schema_version\": 99}");
  EXPECT_NE(errorOf([&] { readRunReport(dir.string()); }).find("has schema_version 99"), std::string::npos);
  write("{\"schema_version\": 1}");
  const std::string missing = errorOf([&] { writeReportViews(readRunReport(dir.string()), dir.string()); });
  EXPECT_NE(missing.find("report.json is malformed"), std::string::npos) << missing;
  EXPECT_EQ(missing.find('\n'), std::string::npos);
}

TEST_F(RunDir, WithoutTimelineNoTraceAndStaleOnesGo) {
  Json report = mlp().report;
  EXPECT_EQ(
      writeReportViews(report, dir.string()),
      (std::vector<std::string>{"per_op.csv", "layers.csv", "units.csv", "timeline.csv", "trace.json", "report.html"}));
  report["ops"] = Json::array();
  EXPECT_EQ(writeReportViews(report, dir.string()),
            (std::vector<std::string>{"per_op.csv", "layers.csv", "units.csv", "report.html"}));
  EXPECT_FALSE(std::filesystem::exists(dir / "trace.json"));
  EXPECT_FALSE(std::filesystem::exists(dir / "timeline.csv"));
  EXPECT_TRUE(reportPageData(report)["timeline"].is_null());
}

}  // namespace
}  // namespace tpusim

namespace tpusim {
namespace {

TEST(MemoryTimeline, TensorsHoldTheirAddressesFromFirstWriteToLastRead) {
  // A weight [0, 100) for the whole step; B [100, 150) written by op produce_b over
  // cycles [10, 20) and read by consume_b over [30, 40); D [120, 150), a view of B written
  // with it, adds no bytes; C [100, 180) reuses B's addresses, written over [40, 50) and
  // never read (an output): to the end. 100 cycles, 100 windows of 1 cycle:
  // cycles 0-9 hold 100 B, 10-39 150 B, 40-99 180 B.
  program::ChipProgram chip;
  const auto buffer = [&](program::BufferRole role, uint64_t offset, uint64_t bytes) {
    program::Buffer* b = chip.add_buffers();
    b->set_id(static_cast<uint32_t>(chip.buffers_size() - 1));
    b->set_space(program::HBM);
    b->set_role(role);
    b->set_offset(offset);
    b->set_bytes(bytes);
    return b->id();
  };
  const uint32_t weight = buffer(program::WEIGHT, 0, 100);
  const uint32_t b = buffer(program::ACTIVATION, 100, 50);
  const uint32_t d = buffer(program::ACTIVATION, 120, 30);
  const uint32_t c = buffer(program::ACTIVATION, 100, 80);
  (void)weight;
  program::Instruction* store = chip.add_instructions();
  store->set_op("produce_b");
  store->add_writes(b), store->add_writes(d);
  program::Instruction* load = chip.add_instructions();
  load->set_op("consume_b");
  load->add_reads(b);
  program::Instruction* output = chip.add_instructions();
  output->set_op("produce_c");
  output->add_writes(c);
  Timeline timeline;
  timeline.addUnit("chip0.core0.dma0");
  timeline.record({0, 0, 0, 10, 20});
  timeline.record({0, 1, 0, 30, 40});
  timeline.record({0, 2, 0, 40, 50});
  const MemoryTimeline memory = memoryTimeline(chip, instructionOps(chip), timeline, 100);
  EXPECT_EQ(memory.window_cycles, 1u);
  ASSERT_EQ(memory.peak_bytes.size(), 100u);
  for (size_t w = 0; w < 100; ++w) EXPECT_EQ(memory.peak_bytes[w], w < 10 ? 100u : w < 40 ? 150u : 180u) << w;
  EXPECT_EQ(memory.peak, 180u);
  EXPECT_EQ(memory.peak_cycle, 40u);
}

TEST(MemoryTimeline, MlpHoldsItsWeightsThroughoutAndPeaksAsThePlan) {
  for (const char* mode : {"training", "inference"}) {
    RunRequest request;
    request.model_path = TPUSIM_SOURCE_DIR "/traces/mlp.onnx";
    request.hw = "tpuv5e";
    request.mode = mode;
    const Json report = runRequest(request).report;
    const auto& timeline = report["memory_timeline"];
    const auto& memory = report["memory"];
    const auto& roles = memory["bytes_by_role"];
    const uint64_t resident =
        roles["input"].get<uint64_t>() + roles["weight"].get<uint64_t>() + roles["optimizer_state"].get<uint64_t>();
    // Inputs and weights are held throughout, so no window holds less.
    for (const auto& bytes : timeline["window_peak_bytes"]) EXPECT_GE(bytes.get<uint64_t>(), resident) << mode;
    // Within the plan's address extent, and the plan's most bytes live at once but for the
    // few tensors no instruction touches (kept in VMEM by fusion: 1280 B in training).
    EXPECT_LE(timeline["peak_bytes"].get<uint64_t>(), memory["peak_bytes"].get<uint64_t>()) << mode;
    EXPECT_GE(static_cast<double>(timeline["peak_bytes"].get<uint64_t>()),
              0.999 * static_cast<double>(memory["live_peak_bytes"].get<uint64_t>()))
        << mode;
  }
}

}  // namespace
}  // namespace tpusim
