// A data-parallel training step's collectives through the whole simulator (the
// SystemC chip, its ICI unit and the pod's network of every chip): 48 layers, each
// a backward-pass stand-in on the VPU followed by the all-reduce of its 16 MiB f32
// gradient (assumed: about a 4M-parameter layer), on tpuv4 tori of 64 to 1024 chips.
// Reports the wall time, the simulated step and the network model's memory.
#include <string>

#include <benchmark/benchmark.h>

#include "sim/chip/driver.hpp"
#include "traces/program_format.hpp"

namespace {

constexpr int kLayers = 48;
constexpr uint64_t kGradientBytes = uint64_t{16} << 20;

tpusim::program::Instruction& add(tpusim::program::ChipProgram& chip, const std::string& name,
                                  tpusim::program::Unit unit) {
  tpusim::program::Instruction* ins = chip.add_instructions();
  ins->set_id(static_cast<uint32_t>(chip.instructions_size() - 1));
  ins->set_name(name + std::to_string(ins->id()));
  ins->set_op(ins->name());
  ins->set_op_type(name);
  ins->set_unit(unit);
  return *ins;
}

tpusim::program::Program layersProgram(const std::string& shape, uint32_t chips) {
  tpusim::program::Program program;
  program.set_format(tpusim::kProgramFormat);
  program.set_schema_version(tpusim::kProgramSchemaVersion);
  program.set_model("pod_bench");
  program.set_mode("training");
  program.set_replicas(chips);
  program.set_topology_kind("3d_torus");
  program.set_topology_shape(shape);
  tpusim::program::ChipProgram& chip = *program.add_chips();
  for (int layer = 0; layer < kLayers; ++layer) {
    // 4M elements at one op each: about 2,000 cycles of the VPU, shorter than the all-reduce.
    tpusim::program::Instruction& backward = add(chip, "backward", tpusim::program::VPU);
    backward.mutable_vector()->set_elements(kGradientBytes / 4);
    backward.mutable_vector()->set_ops_per_element(1);
    if (layer > 0) backward.add_deps(backward.id() - 2);
    tpusim::program::Instruction& reduce = add(chip, "all_reduce", tpusim::program::ICI);
    tpusim::program::Collective* c = reduce.mutable_collective();
    c->set_kind(tpusim::program::ALL_REDUCE);
    c->set_bytes(kGradientBytes);
    c->set_dtype(tpusim::program::F32);
    c->set_replicas(chips);
    c->set_algorithm(tpusim::program::TORUS);
    reduce.set_bytes(kGradientBytes);
    reduce.add_deps(backward.id());
  }
  return program;
}

void BM_DataParallelStep48AllReduces(benchmark::State& state, const std::string& shape, uint32_t chips) {
  const tpusim::HardwareParams hw = tpusim::HardwareParams::load("tpuv4");
  const tpusim::program::Program program = layersProgram(shape, chips);
  uint64_t cycles = 0;
  double model_bytes = 0, link_bytes = 0;
  for (auto _ : state) {
    const tpusim::SimResult result = tpusim::simulate(program, hw);
    cycles = result.total_cycles;
    model_bytes = result.stats->value("ici.model_bytes");
    link_bytes = result.stats->value("ici.bytes");
  }
  state.counters["chips"] = chips;
  state.counters["simulated_ms"] = static_cast<double>(cycles) / 1.05e6;  // tpuv4: 1050 MHz
  state.counters["network_model_MiB"] = model_bytes / (1 << 20);
  state.counters["link_GiB"] = link_bytes / (1 << 30);
}

BENCHMARK_CAPTURE(BM_DataParallelStep48AllReduces, 4x4x4, "4x4x4", 64)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_DataParallelStep48AllReduces, 8x8x8, "8x8x8", 512)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_DataParallelStep48AllReduces, 8x8x16, "8x8x16", 1024)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
