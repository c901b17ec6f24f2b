// Cost of the files beside report.json (docs/report-schema.md, "Files of a run") on one training
// step of ResNet-50 at batch 32 on tpuv4 (119,249 instructions): each view made from
// the report, and the memory timeline made from the Program and the simulated timeline.
// Items are instructions. Run: build/bench/report_views_bench (figures depend on the
// machine; quote medians).
#include <benchmark/benchmark.h>

#include "api/session.hpp"
#include "report/csv_tables.hpp"
#include "report/html_report.hpp"
#include "report/memory_timeline.hpp"
#include "report/report.hpp"
#include "report/trace_events.hpp"
#include "report/utilization_windows.hpp"
#include "sim/chip/driver.hpp"

namespace {

struct Step {
  tpusim::program::Program program;
  tpusim::SimResult result;
  nlohmann::ordered_json report;
};

const Step& resnet() {
  static const Step step = [] {
    tpusim::RunRequest request;
    request.model_path = TPUSIM_SOURCE_DIR "/traces/resnet50.onnx";
    request.batch = 32;
    const tpusim::HardwareParams hw = tpusim::resolveHardware(request);
    Step s;
    s.program = tpusim::compileRequest(request, hw);
    s.result = tpusim::simulate(s.program, hw);
    s.report = tpusim::buildReport(s.program, s.result, hw, tpusim::RunInfo{s.program.model(), {}, true});
    return s;
  }();
  return step;
}

void countInstructions(benchmark::State& state) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(resnet().report["ops"].size()));
}

void BM_TimelineCsv(benchmark::State& state) {
  const auto& report = resnet().report;
  for (auto _ : state) {
    benchmark::DoNotOptimize(tpusim::timelineCsv(tpusim::utilizationWindows(report), 1e9));
  }
  countInstructions(state);
}
BENCHMARK(BM_TimelineCsv)->Unit(benchmark::kMillisecond);

void BM_TraceJson(benchmark::State& state) {
  const auto& report = resnet().report;
  for (auto _ : state) benchmark::DoNotOptimize(tpusim::traceJson(report));
  countInstructions(state);
}
BENCHMARK(BM_TraceJson)->Unit(benchmark::kMillisecond);

void BM_ReportHtml(benchmark::State& state) {
  const auto& report = resnet().report;
  for (auto _ : state) benchmark::DoNotOptimize(tpusim::reportHtml(report));
  countInstructions(state);
}
BENCHMARK(BM_ReportHtml)->Unit(benchmark::kMillisecond);

void BM_MemoryTimeline(benchmark::State& state) {
  const Step& step = resnet();
  for (auto _ : state) {
    benchmark::DoNotOptimize(tpusim::memoryTimeline(step.program.chips(0),
                                                    tpusim::instructionOps(step.program.chips(0)), step.result.timeline,
                                                    step.result.total_cycles)
                                 .peak);
  }
  countInstructions(state);
}
BENCHMARK(BM_MemoryTimeline)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
