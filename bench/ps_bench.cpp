// Parameter-server model speed (docs/strategies.md): the 26 embedding tables of
// traces/dlrm.onnx (840,543 rows), 32 workers at batch 32 on 16 tasks, 10 steps
// of Zipf-1.1 ids, per policy and aggregation: id generation, deduplication,
// re-sharding and timing, everything `tpusim run --strategy ps` adds to a run.
// Run: build/bench/ps_bench (figures depend on the machine; quote medians).
#include <benchmark/benchmark.h>

#include "api/ps_run.hpp"
#include "api/session.hpp"
#include "sim/ps/ps_model.hpp"

namespace {

const std::vector<tpusim::ps::EmbeddingTable>& dlrmTables() {
  static const std::vector<tpusim::ps::EmbeddingTable> tables = [] {
    tpusim::RunRequest request;
    request.model_path = TPUSIM_SOURCE_DIR "/traces/dlrm.onnx";
    return tpusim::embeddingTablesOf(tpusim::buildModelGraph(request).graph, 32);
  }();
  return tables;
}

void psRun(benchmark::State& state, tpusim::ps::ShardingPolicy policy, tpusim::ps::Aggregation aggregation) {
  tpusim::ps::PsConfig config = tpusim::ps::psConfigOf(tpusim::HardwareParams::load("tpuv4").config());
  config.sharding = policy;
  config.aggregation = aggregation;
  uint64_t lookups = 0;
  for (auto _ : state) {
    const tpusim::ps::PsResult r = tpusim::ps::runParameterServer(dlrmTables(), config, 32, 32, 10, 323000000);
    lookups = r.lookups;
    benchmark::DoNotOptimize(r.schedule.step_end.back());
  }
  state.counters["lookups_per_s"] =
      benchmark::Counter(static_cast<double>(lookups), benchmark::Counter::kIsIterationInvariantRate);
}

using tpusim::ps::Aggregation;
using tpusim::ps::ShardingPolicy;
BENCHMARK_CAPTURE(psRun, round_robin_sync, ShardingPolicy::kRoundRobin, Aggregation::kSync)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(psRun, size_balanced_sync, ShardingPolicy::kSizeBalanced, Aggregation::kSync)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(psRun, dynamic_sync, ShardingPolicy::kDynamic, Aggregation::kSync)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(psRun, dynamic_async, ShardingPolicy::kDynamic, Aggregation::kAsync)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
