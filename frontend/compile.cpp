#include "frontend/compile.hpp"

#include <algorithm>
#include <chrono>

#include "frontend/passes/cmem_placement.hpp"
#include "frontend/passes/constant_fold.hpp"
#include "frontend/passes/data_parallel.hpp"
#include "frontend/passes/fusion.hpp"
#include "frontend/passes/memory_plan.hpp"
#include "frontend/passes/model_flops.hpp"
#include "frontend/passes/mxu_padding.hpp"
#include "frontend/passes/placement.hpp"
#include "frontend/passes/tensor_parallel.hpp"
#include "sim/common/error.hpp"

namespace tpusim {

namespace {

// `replicas`: the data-parallel degree; `tp`: the tensor-parallel one (chips per group).
PassManager graphPasses(const HardwareParams& hw, int64_t replicas, int64_t tp) {
  PassManager passes;
  const int64_t rows = hw.config().mxu().rows(), cols = hw.config().mxu().cols();
  passes.add("constant_fold", constantFold);
  passes.add("dead_code", [](const ir::Graph& g) { return g.withoutDeadOps(); });
  passes.add("tensor_parallel", [tp](const ir::Graph& g) { return splitTensorParallel(g, tp); });
  passes.add("data_parallel", [replicas, tp](const ir::Graph& g) { return allReduceGradients(g, replicas, tp); });
  passes.add("fuse_elementwise", fuseElementwise);
  passes.add("placement", placeOps);
  passes.add("mxu_padding", [rows, cols](const ir::Graph& g) { return padToMxuTile(g, rows, cols); });
  return passes;
}

}  // namespace

std::vector<std::string> compilerPassNames() {
  std::vector<std::string> names = graphPasses(HardwareParams::load("tpuv4"), 1, 1).names();
  names.push_back("memory_plan");
  names.push_back("lower");
  names.push_back("cmem_placement");
  return names;
}

Compiled compileGraph(const ir::Graph& graph, const HardwareParams& hw, const LowerOptions& options,
                      const CompileOptions& compile) {
  Compiled compiled;
  const int64_t chips = options.topology ? options.topology->numChips() : 1;
  const PassManager passes = graphPasses(hw, chips / options.tensor_parallel, options.tensor_parallel);
  const std::vector<std::string> known = compilerPassNames();
  for (const std::string& name : compile.print_ir_after) {
    if (name == "all" || std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string list;
    for (const std::string& pass : known) list.append(list.empty() ? "" : ", ").append(pass);
    throw Error(ErrorKind::kInvalidConfig,
                "unknown pass '" + name + "' for --print-ir-after (passes: " + list + ", or all)");
  }
  std::vector<std::string> graph_prints;
  bool print_plan = false, print_placement = false;
  for (const std::string& name : compile.print_ir_after) {
    if (name == "memory_plan" || name == "lower" || name == "cmem_placement") {
      print_placement = print_placement || name == "cmem_placement";
      print_plan = print_plan || name == "memory_plan";
      continue;
    }
    graph_prints.push_back(name);
    print_plan = print_plan || name == "all";
    print_placement = print_placement || name == "all";
  }
  const ir::Graph compiled_graph = passes.run(graph, graph_prints, compile.ir_out, compiled.timings);

  auto start = std::chrono::steady_clock::now();
  const MemoryPlan plan = planMemory(compiled_graph);
  compiled.timings.push_back(
      {"memory_plan", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()});
  if (print_plan && compile.ir_out)
    *compile.ir_out << "// IR after memory_plan\n" << describePlan(compiled_graph, plan);

  start = std::chrono::steady_clock::now();
  compiled.program = lowerToProgram(compiled_graph, plan, hw, options);
  compiled.program.set_model_flops(modelFlops(graph));  // before the splits and the padding
  compiled.timings.push_back(
      {"lower", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()});

  start = std::chrono::steady_clock::now();
  program::ChipProgram& chip = *compiled.program.mutable_chips(0);
  placeInCmem(chip, hw.config());
  compiled.timings.push_back(
      {"cmem_placement", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()});
  if (print_placement && compile.ir_out)
    *compile.ir_out << "// IR after cmem_placement\n" << describeCmemPlacement(chip);
  return compiled;
}

}  // namespace tpusim
