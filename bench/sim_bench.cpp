// Simulation speed: compiling and simulating one training step of the
// shipped MLP and of ResNet-50 at batch 128, and the raw MXU/scoreboard path
// on a long chain of matmuls.
// Run: build/bench/sim_bench (figures depend on the machine; quote medians).
#include <benchmark/benchmark.h>

#include "api/session.hpp"
#include "sim/chip/driver.hpp"
#include "traces/program_format.hpp"

namespace {

tpusim::RunRequest mlpRequest(int64_t batch) {
  tpusim::RunRequest request;
  request.model_path = TPUSIM_SOURCE_DIR "/traces/mlp.onnx";
  request.batch = batch;
  return request;
}

void BM_CompileMlpStep(benchmark::State& state) {
  const tpusim::RunRequest request = mlpRequest(state.range(0));
  const tpusim::HardwareParams hw = tpusim::resolveHardware(request);
  for (auto _ : state) benchmark::DoNotOptimize(tpusim::compileRequest(request, hw));
}
BENCHMARK(BM_CompileMlpStep)->Arg(32)->Arg(1024)->Unit(benchmark::kMillisecond);

void BM_SimulateMlpStep(benchmark::State& state) {
  const tpusim::RunRequest request = mlpRequest(state.range(0));
  const tpusim::HardwareParams hw = tpusim::resolveHardware(request);
  const tpusim::program::Program program = tpusim::compileRequest(request, hw);
  uint64_t instructions = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(tpusim::simulate(program, hw).total_cycles);
    instructions += static_cast<uint64_t>(program.chips(0).instructions_size());
  }
  state.counters["instructions/s"] = benchmark::Counter(static_cast<double>(instructions), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SimulateMlpStep)->Arg(32)->Arg(1024)->Unit(benchmark::kMillisecond);

// ResNet-50 training at batch 128 on tpuv4: the compiler's passes and tiled lowering
// (452,599 instructions), then the simulation of that Program.
tpusim::RunRequest resnetRequest() {
  tpusim::RunRequest request;
  request.model_path = TPUSIM_SOURCE_DIR "/traces/resnet50.onnx";
  request.batch = 128;
  return request;
}

void BM_CompileResNet50Batch128(benchmark::State& state) {
  const tpusim::RunRequest request = resnetRequest();
  const tpusim::HardwareParams hw = tpusim::resolveHardware(request);
  for (auto _ : state) benchmark::DoNotOptimize(tpusim::compileRequest(request, hw));
}
BENCHMARK(BM_CompileResNet50Batch128)->Iterations(3)->Unit(benchmark::kMillisecond);

void BM_SimulateResNet50Batch128(benchmark::State& state) {
  const tpusim::RunRequest request = resnetRequest();
  const tpusim::HardwareParams hw = tpusim::resolveHardware(request);
  const tpusim::program::Program program = tpusim::compileRequest(request, hw);
  uint64_t instructions = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(tpusim::simulate(program, hw).total_cycles);
    instructions += static_cast<uint64_t>(program.chips(0).instructions_size());
  }
  state.counters["instructions/s"] = benchmark::Counter(static_cast<double>(instructions), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SimulateResNet50Batch128)->Iterations(3)->Unit(benchmark::kMillisecond);

// One step on tpuv4 under each HBM model (docs/memory.md, "In the chip"): the shipped MLP's
// training step at batch 32 and ResNet-50's inference step at batch 1.
void BM_SimulateByHbmModel(benchmark::State& state, const char* model, int64_t batch, const char* mode,
                           const char* hbm_model) {
  tpusim::RunRequest request;
  request.model_path = std::string(TPUSIM_SOURCE_DIR "/traces/") + model;
  request.batch = batch;
  request.mode = mode;
  request.overrides = {{"hbm.model", hbm_model}};
  const tpusim::HardwareParams hw = tpusim::resolveHardware(request);
  const tpusim::program::Program program = tpusim::compileRequest(request, hw);
  uint64_t cycles = 0;
  for (auto _ : state) cycles = tpusim::simulate(program, hw).total_cycles;
  state.counters["step_cycles"] = static_cast<double>(cycles);
}
BENCHMARK_CAPTURE(BM_SimulateByHbmModel, mlp_bandwidth, "mlp.onnx", 32, "training", "bandwidth")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateByHbmModel, mlp_dram_memoized, "mlp.onnx", 32, "training", "dram_memoized")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateByHbmModel, mlp_dram, "mlp.onnx", 32, "training", "dram")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateByHbmModel, resnet50_bandwidth, "resnet50.onnx", 1, "inference", "bandwidth")
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateByHbmModel, resnet50_dram_memoized, "resnet50.onnx", 1, "inference", "dram_memoized")
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateByHbmModel, resnet50_dram, "resnet50.onnx", 1, "inference", "dram")
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

void BM_SimulateDependentChain(benchmark::State& state) {
  tpusim::program::Program program;
  program.set_format(tpusim::kProgramFormat);
  program.set_schema_version(tpusim::kProgramSchemaVersion);
  auto* chip = program.add_chips();
  for (int64_t i = 0; i < state.range(0); ++i) {
    auto* ins = chip->add_instructions();
    ins->set_id(static_cast<uint32_t>(i));
    ins->set_name("mm" + std::to_string(i));
    ins->set_unit(tpusim::program::MXU);
    ins->set_unit_index(static_cast<uint32_t>(i % 4));
    ins->mutable_matmul()->set_m(256);
    ins->mutable_matmul()->set_k(256);
    ins->mutable_matmul()->set_n(256);
    ins->mutable_matmul()->set_input_dtype(tpusim::program::BF16);
    ins->mutable_matmul()->set_accumulate_dtype(tpusim::program::F32);
    if (i > 0) ins->add_deps(static_cast<uint32_t>(i - 1));
  }
  const tpusim::HardwareParams hw = tpusim::HardwareParams::load("tpuv4");
  for (auto _ : state) benchmark::DoNotOptimize(tpusim::simulate(program, hw).total_cycles);
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_SimulateDependentChain)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
