#include "api/session.hpp"

#include <filesystem>

#include "frontend/import/onnx_import.hpp"
#include "frontend/lower/lower.hpp"
#include "frontend/program_io.hpp"
#include "frontend/train/training_graph.hpp"
#include "report/report.hpp"
#include "sim/chip/driver.hpp"
#include "sim/common/error.hpp"
#include "sim/common/log.hpp"

namespace tpusim {

HardwareParams resolveHardware(const RunRequest& request) {
  HardwareParams hw = HardwareParams::load(request.hw);
  hw.apply(request.overrides);
  return hw;
}

program::Program compileRequest(const RunRequest& request, const HardwareParams& hw) {
  if (!std::filesystem::exists(request.model_path)) {
    throw Error(ErrorKind::kInvalidInput, "model file '" + request.model_path + "' does not exist");
  }
  if (isProgramPath(request.model_path)) {
    program::Program program = readProgram(request.model_path);
    if (request.batch && static_cast<uint64_t>(*request.batch) != program.batch()) {
      throw Error(ErrorKind::kInvalidConfig, "--batch applies when compiling a model; " + request.model_path +
                                                 " was compiled for batch " + std::to_string(program.batch()));
    }
    if (request.mode && *request.mode != program.mode()) {
      throw Error(ErrorKind::kInvalidConfig,
                  request.model_path + " was compiled for " + program.mode() + ", not " + *request.mode);
    }
    if (program.target_hw() != hw.name()) {
      spdlog::warn("{} was compiled for {}; running it on {}", request.model_path, program.target_hw(), hw.name());
    }
    return program;
  }
  const std::string mode = request.mode.value_or("training");
  if (mode != "training" && mode != "inference") {
    throw Error(ErrorKind::kInvalidConfig, "unknown mode '" + mode + "' (use training or inference)");
  }
  if (!(request.learning_rate > 0)) throw Error(ErrorKind::kInvalidConfig, "learning rate must be > 0");
  const ImportedModel model = importOnnxFile(request.model_path, OnnxImportOptions{request.batch});
  if (!request.batch) spdlog::info("batch size {} (set it with --batch)", model.batch);
  const ir::Graph graph = mode == "training" ? buildTrainingGraph(model, TrainingOptions{request.learning_rate})
                                             : buildInferenceGraph(model);
  spdlog::debug("{} graph:\n{}", mode, graph.toString());
  const std::string name = std::filesystem::path(request.model_path).filename().string();
  return lowerToProgram(graph, hw, LowerOptions{name, mode, static_cast<uint64_t>(model.batch)});
}

RunOutcome runRequest(const RunRequest& request) {
  const HardwareParams hw = resolveHardware(request);
  RunOutcome outcome;
  outcome.program = compileRequest(request, hw);
  const SimResult result = simulate(outcome.program, hw);
  outcome.report = buildReport(outcome.program, result, hw, RunInfo{outcome.program.model(), request.overrides});
  return outcome;
}

}  // namespace tpusim
