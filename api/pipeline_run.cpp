#include "api/pipeline_run.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "api/parallel_degrees.hpp"
#include "api/strategy.hpp"
#include "frontend/compile.hpp"
#include "frontend/import/hlo_import.hpp"
#include "frontend/passes/pipeline_stages.hpp"
#include "frontend/program_io.hpp"
#include "report/instruction_ops.hpp"
#include "report/mfu_section.hpp"
#include "report/report.hpp"
#include "sim/chip/driver.hpp"
#include "sim/common/error.hpp"
#include "sim/interconnect/collectives.hpp"
#include "sim/interconnect/link_config.hpp"
#include "sim/interconnect/ocs.hpp"
#include "sim/pipeline/pipeline_schedule.hpp"

namespace tpusim {

namespace {

void checkPipelineRequest(const RunRequest& request) {
  const std::string pp = "--pp " + std::to_string(request.pipeline_parallel);
  if (isProgramPath(request.model_path)) {
    throw Error(ErrorKind::kUnsupported, pp + " cuts a model into stages; " + request.model_path +
                                             " is already compiled (compile the model instead)");
  }
  if (isHloPath(request.model_path)) {
    throw Error(ErrorKind::kUnsupported, pp + " cuts an ONNX model into stages; an HLO module runs as written");
  }
  if (request.mode.value_or("training") != "training") {
    throw Error(ErrorKind::kInvalidConfig, pp + " pipelines a training step, not --mode " + *request.mode);
  }
  const Strategy strategy = strategyFromName(request.strategy);
  if (strategy != Strategy::kNone && strategy != Strategy::kTpu) {
    throw Error(ErrorKind::kUnsupported,
                pp + " runs on one ICI slice (--topology), not with --strategy " + strategyName(strategy));
  }
  if (request.steps > 0 || request.functional || !request.precision_schedule.empty()) {
    throw Error(ErrorKind::kUnsupported, pp + " simulates one step without values: --steps, --functional and "
                                              "--precision-schedule do not apply");
  }
  if (request.micro_batches < 1) throw Error(ErrorKind::kInvalidConfig, "--micro-batches must be >= 1");
}

// Stage s holds chips [s n, (s + 1) n) of the slice (n = chips / P): a block of whole
// x lines, x-y planes or z layers, so its tensor- and data-parallel groups are laid out
// as on a slice of that shape.
Topology stageBlock(const Topology& slice, int64_t stages) {
  const int64_t n = slice.numChips() / stages;
  const int64_t x = slice.dim(0), y = slice.dim(1), z = slice.dim(2);
  std::array<int64_t, 3> block{0, 0, 0};
  if (n % (x * y) == 0 && z % (n / (x * y)) == 0) {
    block = {x, y, n / (x * y)};
  } else if (n % x == 0 && y % (n / x) == 0) {
    block = {x, n / x, 1};
  } else if (x % n == 0) {
    block = {n, 1, 1};
  } else {
    throw Error(ErrorKind::kInvalidConfig, "--pp " + std::to_string(stages) + ": a stage's " + std::to_string(n) +
                                               " chips are not a block of --topology " + slice.shapeString());
  }
  const std::string shape = slice.shapeString();
  const size_t dims = static_cast<size_t>(std::count(shape.begin(), shape.end(), 'x')) + 1;
  std::vector<int> dims_of(block.begin(), block.begin() + static_cast<std::ptrdiff_t>(dims));
  return Topology(slice.kind(), dims_of, n);
}

// A stage's step in three parts: the forward, the backward (rematerialization's
// recomputations run there too), and the update, which holds the optimizer, the
// data-parallel gradient all-reduces and loss scaling, as the compiler recorded each op's
// phase (program::OpLowering.phase).
enum class StagePart { kForward, kBackward, kUpdate };
StagePart stagePartOf(program::Phase phase, const std::string& op) {
  switch (phase) {
    case program::FORWARD: return StagePart::kForward;
    case program::BACKWARD: return StagePart::kBackward;
    case program::UPDATE:
    case program::COLLECTIVE:
    case program::LOSS_SCALING: return StagePart::kUpdate;
    default: throw Error(ErrorKind::kInternal, "pipeline: op '" + op + "' has no recorded phase");
  }
}

struct StageTimes {
  uint64_t forward = 0, backward = 0, update = 0;  // cycles
  uint64_t check = 0;  // of the update: until the stage's gradients-finite flag (loss scaling)
};

// Forward: until the last forward instruction ends; backward: from there to the last
// backward one; update: the rest of the step.
StageTimes stageTimes(const program::ChipProgram& chip, const SimResult& result) {
  uint64_t forward_end = 0, backward_end = 0, flag_end = 0;
  const InstructionOps ops = instructionOps(chip);
  for (const TimelineEvent& event : result.timeline.events()) {
    const program::Instruction& ins = chip.instructions(static_cast<int>(event.instruction));
    const StagePart part = stagePartOf(ops.phase(chip, static_cast<int>(event.instruction)), ins.op());
    if (part == StagePart::kForward) forward_end = std::max(forward_end, event.end_cycle);
    if (part == StagePart::kBackward) backward_end = std::max(backward_end, event.end_cycle);
    if (ins.op() == "loss_scale.finite") flag_end = std::max(flag_end, event.end_cycle);
  }
  backward_end = std::max(backward_end, forward_end);
  const uint64_t update = result.total_cycles - std::min(result.total_cycles, backward_end);
  return {forward_end, backward_end - forward_end, update,
          std::min(update, flag_end - std::min(flag_end, backward_end))};
}

// The slice's links, its routing and OCS latencies.
Network sliceNetwork(const HardwareParams& hw, const Topology& slice) {
  Network network(slice, iciLinkConfigOf(hw), routingModeFromName(hw.config().ici().routing()));
  const OcsConfig ocs_config = ocsConfigOf(hw);
  const OcsWiring ocs = wireSlice(slice, ocs_config);
  const auto ocs_ps = static_cast<uint64_t>(std::llround(ocs_config.insertion_latency_ns * 1e3));
  if (ocs_ps > 0) {
    for (const LinkId link : ocs.ocs_links) network.setExtraLatency(link, ocs_ps);
  }
  return network;
}

// One micro-batch's transfer across a boundary: every chip of stage `from`'s block sends
// `bytes` to the chip at its place in stage `to`'s block, at once, over the slice's links.
uint64_t boundaryPs(const HardwareParams& hw, const Topology& slice, int64_t block_chips, uint32_t from, uint32_t to,
                    uint64_t bytes) {
  if (bytes == 0) return 0;
  Network network = sliceNetwork(hw, slice);
  std::vector<Collective> sends;
  for (int64_t c = 0; c < block_chips; ++c) {
    sends.push_back(sendRecv(network, static_cast<ChipId>(from * block_chips + c),
                             static_cast<ChipId>(to * block_chips + c), bytes));
  }
  network.run();
  uint64_t done = 0;
  for (const Collective& send : sends) done = std::max(done, send.finishTime(network));
  return done;
}

// Loss scaling's all-reduce of each stage's partial gradient sum (one f32): the chips at
// one place in every block, all places at once, over the slice's links.
uint64_t partialSumAllReducePs(const HardwareParams& hw, const Topology& slice, int64_t block_chips, int64_t stages) {
  Network network = sliceNetwork(hw, slice);
  std::vector<Collective> reduces;
  for (int64_t c = 0; c < block_chips; ++c) {
    Group group;
    for (int64_t s = 0; s < stages; ++s) group.push_back(static_cast<ChipId>(s * block_chips + c));
    reduces.push_back(allReduce(network, group, 4, AllReduceAlgorithm::kRing));
  }
  network.run();
  uint64_t done = 0;
  for (const Collective& reduce : reduces) done = std::max(done, reduce.finishTime(network));
  return done;
}

void addTransferRecords(program::Program& program, uint32_t stage, const std::vector<StageTransfer>& transfers) {
  for (const StageTransfer& transfer : transfers) {
    if (transfer.from != stage && transfer.to != stage) continue;
    program::PipelineTransfer* record = program.add_pipeline_transfers();
    record->set_tensor(transfer.tensor);
    record->set_bytes(transfer.bytes);
    record->set_send(transfer.from == stage);
    record->set_peer_stage(transfer.from == stage ? transfer.to : transfer.from);
    record->set_gradient(transfer.gradient);
  }
}

struct StageRun {
  program::Program program;
  SimResult result;
  StageTimes times;
};

}  // namespace

CompiledPipeline compilePipeline(const RunRequest& request, const HardwareParams& hw) {
  checkPipelineRequest(request);
  const std::optional<Topology> slice = sliceOf(request, hw);
  const ParallelDegrees degrees = parallelDegreesOf(request, slice);
  pipelineScheduleFromName(request.pipeline_schedule);
  const int64_t batch = request.batch.value_or(kDefaultBatch);
  if (batch % request.micro_batches != 0) {
    throw Error(ErrorKind::kInvalidConfig, "batch " + std::to_string(batch) + " does not divide into " +
                                               std::to_string(request.micro_batches) +
                                               " micro-batches (--micro-batches)");
  }
  if (request.all_reduce_bucket_mib < 0 || !std::isfinite(request.all_reduce_bucket_mib)) {
    throw Error(ErrorKind::kInvalidConfig, "--all-reduce-bucket-mib must be >= 0");
  }
  RunRequest micro = request;  // one micro-batch, no gradient accumulation
  micro.batch = batch / request.micro_batches;
  micro.micro_batches = 1;
  micro.pipeline_parallel = 1;
  const ModelGraph built = buildModelGraph(micro);
  const std::string name = std::filesystem::path(request.model_path).filename().string();
  CompiledPipeline pipeline{
      request, degrees, slice, stageBlock(*slice, degrees.pp), splitPipelineStages(built.graph, degrees.pp, name), {}};
  pipeline.request.batch = batch;
  const PipelineStages& cut = pipeline.cut;
  for (size_t s = 0; s < cut.stages.size(); ++s) {
    LowerOptions lower{name, built.mode, static_cast<uint64_t>(*micro.batch)};
    lower.matmul_precision = request.matmul_precision;
    lower.tiling_objective = request.tiling_objective;
    if (pipeline.block->numChips() > 1) lower.topology = *pipeline.block;
    lower.tensor_parallel = degrees.tp;
    lower.all_reduce_bucket_bytes = static_cast<uint64_t>(std::ceil(request.all_reduce_bucket_mib * 1024 * 1024));
    Compiled compiled = compileGraph(cut.stages[s].graph, hw, lower);
    program::Program& program = compiled.program;
    program.set_precision(request.precision);
    program.set_loss(built.loss);
    program.set_pipeline_stage(static_cast<uint32_t>(s));
    program.set_pipeline_stages(static_cast<uint32_t>(degrees.pp));
    addTransferRecords(program, static_cast<uint32_t>(s), cut.transfers);
    pipeline.stages.push_back(std::move(program));
  }
  return pipeline;
}

RunOutcome simulatePipeline(CompiledPipeline pipeline, const HardwareParams& hw) {
  const RunRequest& request = pipeline.request;
  const ParallelDegrees& degrees = pipeline.degrees;
  const PipelineStages& cut = pipeline.cut;
  const Topology& slice = *pipeline.slice;
  const int64_t block_chips = pipeline.block->numChips();
  const PipelineSchedule schedule = pipelineScheduleFromName(request.pipeline_schedule);
  const auto micro_batches = static_cast<uint32_t>(request.micro_batches);
  const int64_t batch = *request.batch;
  std::vector<StageRun> runs;
  for (program::Program& program : pipeline.stages) {
    SimResult result = simulate(program, hw);
    const StageTimes times = stageTimes(program.chips(0), result);
    runs.push_back({std::move(program), std::move(result), times});
  }

  const double clock_hz = runs[0].result.clock_hz;
  const auto period_ps = static_cast<uint64_t>(std::llround(1e12 / clock_hz));
  const auto toCycles = [&](uint64_t ps) { return (ps + period_ps - 1) / period_ps; };
  PipelineRequest plan;
  plan.micro_batches = micro_batches;
  plan.schedule = schedule;
  for (size_t s = 0; s < runs.size(); ++s) {
    plan.stages.push_back(
        {runs[s].times.forward * period_ps, runs[s].times.backward * period_ps, cut.stages[s].activation_bytes});
  }
  struct Boundary {
    uint64_t activation_bytes = 0, gradient_bytes = 0, forward_ps = 0, backward_ps = 0;
  };
  std::vector<Boundary> boundaries(runs.size() - 1);
  for (const StageTransfer& transfer : cut.transfers) {
    Boundary& b = boundaries[std::min(transfer.from, transfer.to)];
    (transfer.gradient ? b.gradient_bytes : b.activation_bytes) += transfer.bytes;
  }
  for (size_t s = 0; s + 1 < runs.size(); ++s) {
    Boundary& b = boundaries[s];
    const auto up = static_cast<uint32_t>(s);
    b.forward_ps = boundaryPs(hw, slice, block_chips, up, up + 1, b.activation_bytes);
    b.backward_ps = boundaryPs(hw, slice, block_chips, up + 1, up, b.gradient_bytes);
    // The schedule charges one time per boundary: the slower direction.
    plan.send_ps.push_back(std::max(b.forward_ps, b.backward_ps));
  }
  const PipelineOutcome outcome = schedulePipeline(plan);

  // Each stage updates once its last backward ends: the gradient all-reduce tail and the
  // optimizer, as its one-micro-batch step ran them. Under loss scaling every stage's
  // update after its check waits for the slowest check and the all-reduce of the partial sums.
  std::vector<uint64_t> last_end(runs.size(), 0);
  for (const PipelineTask& task : outcome.tasks) last_end[task.stage] = std::max(last_end[task.stage], task.end_ps);
  const uint64_t flags_ps = cut.loss_scaling ? partialSumAllReducePs(hw, slice, block_chips, degrees.pp) : 0;
  uint64_t step_ps = 0, checked_ps = 0, after_ps = 0;
  for (size_t s = 0; s < runs.size(); ++s) {
    const StageTimes& t = runs[s].times;
    step_ps = std::max(step_ps, last_end[s] + t.update * period_ps);
    checked_ps = std::max(checked_ps, last_end[s] + t.check * period_ps);
    after_ps = std::max(after_ps, (t.update - t.check) * period_ps);
  }
  if (cut.loss_scaling) step_ps = checked_ps + flags_ps + after_ps;

  // Memory: the one-micro-batch plan holds one micro-batch's activations; the others in
  // flight add theirs.
  std::vector<uint64_t> hbm_peak(runs.size());
  for (size_t s = 0; s < runs.size(); ++s) {
    const uint32_t in_flight = outcome.stages[s].peak_in_flight;
    hbm_peak[s] = runs[s].program.chips(0).memory().peak_bytes() +
                  (in_flight > 1 ? in_flight - 1 : 0) * cut.stages[s].activation_bytes;
  }

  RunOutcome out;
  out.report = buildReport(runs[0].program, runs[0].result, hw,
                           RunInfo{runs[0].program.model(), request.overrides, request.instruction_timeline});
  out.report["parallelism"] = {{"dp", degrees.dp}, {"tp", degrees.tp}, {"pp", degrees.pp}};
  nlohmann::ordered_json section;
  section["schedule"] = pipelineScheduleName(schedule);
  section["stages"] = degrees.pp;
  section["micro_batches"] = micro_batches;
  section["micro_batch_size"] = batch / request.micro_batches;
  section["batch_per_replica"] = batch;
  section["layers"] = static_cast<uint64_t>(cut.stages.size() * cut.stages[0].layers.size());
  section["stage_block"] = pipeline.block->shapeString();
  section["step_cycles"] = toCycles(step_ps);
  section["step_time_s"] = static_cast<double>(step_ps) * 1e-12;
  section["schedule_cycles"] = toCycles(outcome.step_ps);
  section["loss_scale_all_reduce_cycles"] = toCycles(flags_ps);
  section["bubble"] = outcome.bubble;
  section["ideal_bubble"] = equalStageBubble(static_cast<uint32_t>(degrees.pp), micro_batches);
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (size_t s = 0; s < runs.size(); ++s) {
    const StageOutcome& o = outcome.stages[s];
    nlohmann::ordered_json stage;
    stage["stage"] = s;
    stage["layers"] = cut.stages[s].layers;
    stage["first_chip"] = static_cast<int64_t>(s) * block_chips;
    stage["chips"] = block_chips;
    stage["forward_cycles"] = runs[s].times.forward;
    stage["backward_cycles"] = runs[s].times.backward;
    stage["update_cycles"] = runs[s].times.update;
    stage["loss_scale_check_cycles"] = runs[s].times.check;
    stage["micro_batch_step_cycles"] = runs[s].result.total_cycles;
    stage["busy_cycles"] = toCycles(o.busy_ps);
    stage["idle_cycles"] = toCycles(o.idle_ps);
    stage["peak_micro_batches_in_flight"] = o.peak_in_flight;
    stage["activation_bytes"] = cut.stages[s].activation_bytes;
    stage["peak_activation_bytes"] = o.peak_activation_bytes;
    stage["hbm_peak_bytes"] = hbm_peak[s];
    stage["instructions"] = runs[s].program.chips(0).instructions_size();
    stages.push_back(stage);
  }
  section["per_stage"] = stages;
  nlohmann::ordered_json bounds = nlohmann::ordered_json::array();
  for (size_t s = 0; s < boundaries.size(); ++s) {
    nlohmann::ordered_json b;
    b["from_stage"] = s;
    b["to_stage"] = s + 1;
    b["activation_bytes"] = boundaries[s].activation_bytes;
    b["gradient_bytes"] = boundaries[s].gradient_bytes;
    b["forward_transfer_cycles"] = toCycles(boundaries[s].forward_ps);
    b["backward_transfer_cycles"] = toCycles(boundaries[s].backward_ps);
    bounds.push_back(b);
  }
  section["boundaries"] = bounds;
  out.report["pipeline"] = section;
  // MFU over the pipeline's step: every stage's model FLOPs for each micro-batch, on each
  // of the D replicas of its block.
  uint64_t model_flops = 0;
  for (const StageRun& run : runs) model_flops += run.program.model_flops();
  const nlohmann::ordered_json mfu = mfuSection(
      model_flops * micro_batches * static_cast<uint64_t>(degrees.dp), static_cast<uint64_t>(block_chips * degrees.pp),
      static_cast<double>(step_ps) * 1e-12, mfuPeakFlopsPerChip(hw, runs[0].program.precision()));
  if (mfu.is_null()) {
    out.report.erase("mfu");
  } else {
    out.report["mfu"] = mfu;
  }
  out.program = std::move(runs[0].program);
  return out;
}

RunOutcome runPipeline(const RunRequest& request, const HardwareParams& hw) {
  RunOutcome out = simulatePipeline(compilePipeline(request, hw), hw);
  const auto capacity = static_cast<uint64_t>(hw.config().hbm().capacity_gib() * 1024.0 * 1024.0 * 1024.0);
  for (const nlohmann::ordered_json& stage : out.report.at("pipeline").at("per_stage")) {
    const auto peak = stage.at("hbm_peak_bytes").get<uint64_t>();
    if (peak <= capacity) continue;
    const auto in_flight = stage.at("peak_micro_batches_in_flight").get<uint64_t>();
    const auto activation = stage.at("activation_bytes").get<uint64_t>();
    const uint64_t more = in_flight > 1 ? in_flight - 1 : 0;
    throw Error(ErrorKind::kResource, "pipeline stage " + stage.at("stage").dump() + " needs " + std::to_string(peak) +
                                          " bytes of HBM (" + std::to_string(peak - more * activation) +
                                          " for one micro-batch + " + std::to_string(more) + " more in flight x " +
                                          std::to_string(activation) + " activation bytes) but " + hw.name() + " has " +
                                          std::to_string(capacity));
  }
  return out;
}

}  // namespace tpusim
