#include "report/step_breakdown.hpp"

#include <utility>
#include <vector>

#include "report/intervals.hpp"

namespace tpusim {

StepBreakdown stepBreakdown(const program::ChipProgram& chip, const Timeline& timeline, uint64_t step_cycles) {
  std::vector<Interval> mxu, vpu, dma, ici;
  for (const TimelineEvent& event : timeline.events()) {
    const Interval span{event.start_cycle, event.end_cycle};
    switch (chip.instructions(static_cast<int>(event.instruction)).unit()) {
      case program::MXU: mxu.push_back(span); break;
      case program::VPU: vpu.push_back(span); break;
      case program::DMA: dma.push_back(span); break;
      case program::ICI: ici.push_back(span); break;
      default: break;
    }
  }
  const std::vector<Interval> mxu_cover = unionOf(std::move(mxu));
  const std::vector<Interval> vpu_cover = unionOf(std::move(vpu));
  const std::vector<Interval> dma_cover = unionOf(std::move(dma));
  const std::vector<Interval> ici_cover = unionOf(std::move(ici));
  const std::vector<Interval> compute = unionOf(mxu_cover, vpu_cover);
  const std::vector<Interval> busy = unionOf(compute, dma_cover);
  StepBreakdown b;
  b.step_cycles = step_cycles;
  b.mxu_cycles = lengthOf(mxu_cover);
  b.vpu_cycles = lengthOf(vpu_cover);
  b.compute_cycles = lengthOf(compute);
  b.exposed_memory_cycles = lengthOutside(dma_cover, compute);
  b.exposed_communication_cycles = lengthOutside(ici_cover, busy);
  b.overlapped_communication_cycles = lengthOf(ici_cover) - b.exposed_communication_cycles;
  const uint64_t covered = b.compute_cycles + b.exposed_memory_cycles + b.exposed_communication_cycles;
  b.idle_cycles = step_cycles > covered ? step_cycles - covered : 0;
  return b;
}

std::string stepBottleneck(const StepBreakdown& b) {
  const std::pair<uint64_t, std::string> parts[] = {
      {b.compute_cycles, b.mxu_cycles >= b.vpu_cycles ? "compute (MXU)" : "compute (VPU)"},
      {b.exposed_memory_cycles, "HBM traffic (DMA not hidden by compute)"},
      {b.exposed_communication_cycles, "interconnect (collectives not hidden)"},
      {b.host_input_stall_cycles, "host input pipeline"},
      {b.idle_cycles, "idle (dependencies and latency)"}};
  const auto* largest = &parts[0];
  for (const auto& part : parts) {
    if (part.first > largest->first) largest = &part;  // ties keep the earlier
  }
  return largest->second;
}

namespace {

StepBreakdown fromSection(const nlohmann::ordered_json& s) {
  StepBreakdown b;
  b.step_cycles = s.at("step_cycles").get<uint64_t>();
  b.compute_cycles = s.at("compute_cycles").get<uint64_t>();
  b.mxu_cycles = s.at("mxu_cycles").get<uint64_t>();
  b.vpu_cycles = s.at("vpu_cycles").get<uint64_t>();
  b.exposed_memory_cycles = s.at("exposed_memory_cycles").get<uint64_t>();
  b.exposed_communication_cycles = s.at("exposed_communication_cycles").get<uint64_t>();
  b.overlapped_communication_cycles = s.at("overlapped_communication_cycles").get<uint64_t>();
  b.idle_cycles = s.at("idle_cycles").get<uint64_t>();
  b.host_input_stall_cycles = s.at("host_input_stall_cycles").get<uint64_t>();
  return b;
}

}  // namespace

nlohmann::ordered_json stepBreakdownSection(const StepBreakdown& b) {
  const uint64_t total = b.step_cycles + b.host_input_stall_cycles;
  const auto share = [total](uint64_t cycles) {
    return total > 0 ? static_cast<double>(cycles) / static_cast<double>(total) : 0.0;
  };
  return {{"chip", "chip0"},
          {"step_cycles", b.step_cycles},
          {"compute_cycles", b.compute_cycles},
          {"mxu_cycles", b.mxu_cycles},
          {"vpu_cycles", b.vpu_cycles},
          {"exposed_memory_cycles", b.exposed_memory_cycles},
          {"exposed_communication_cycles", b.exposed_communication_cycles},
          {"overlapped_communication_cycles", b.overlapped_communication_cycles},
          {"idle_cycles", b.idle_cycles},
          {"host_input_stall_cycles", b.host_input_stall_cycles},
          {"shares",
           {{"compute", share(b.compute_cycles)},
            {"exposed_memory", share(b.exposed_memory_cycles)},
            {"exposed_communication", share(b.exposed_communication_cycles)},
            {"host_input_stall", share(b.host_input_stall_cycles)},
            {"idle", share(b.idle_cycles)}}},
          {"bottleneck", stepBottleneck(b)}};
}

void addHostInputStall(nlohmann::ordered_json& section, uint64_t stall_cycles_per_step) {
  StepBreakdown b = fromSection(section);
  b.host_input_stall_cycles = stall_cycles_per_step;
  section = stepBreakdownSection(b);
}

}  // namespace tpusim
