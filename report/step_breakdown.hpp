// report.json's "step_breakdown" (docs/report-schema.md): where the step's time goes, each
// cycle of chip 0's step counted once, in the first of these that covers it:
//   compute                 an MXU or VPU instruction is in flight;
//   exposed memory          only DMA transfers (HBM <-> VMEM) are in flight;
//   exposed communication   only collectives (the ICI unit) are in flight;
//   idle                    nothing is (waits on dependencies, latency);
// plus, with --steps, the host input stall per step, added to the step. Overlapped
// communication (collectives in flight under compute or DMA) is reported beside the
// partition. Every replica of a data-parallel run has chip 0's timeline (symmetry).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/common/timeline.hpp"
#include "traces/program.pb.h"

namespace tpusim {

struct StepBreakdown {
  uint64_t step_cycles = 0;
  uint64_t compute_cycles = 0;
  uint64_t mxu_cycles = 0;  // cycles with an MXU instruction in flight (inside compute)
  uint64_t vpu_cycles = 0;  // cycles with a VPU instruction in flight (inside compute)
  uint64_t exposed_memory_cycles = 0;
  uint64_t exposed_communication_cycles = 0;
  uint64_t overlapped_communication_cycles = 0;
  uint64_t idle_cycles = 0;
  uint64_t host_input_stall_cycles = 0;  // per step, with --steps
};

StepBreakdown stepBreakdown(const program::ChipProgram& chip, const Timeline& timeline, uint64_t step_cycles);

// The largest part of the step (the host stall included), named for the user ("compute (MXU)",
// "HBM traffic", "interconnect", "host input pipeline", "idle").
std::string stepBottleneck(const StepBreakdown& breakdown);

nlohmann::ordered_json stepBreakdownSection(const StepBreakdown& breakdown);

// The section with the host's mean input stall per step (report.json "host") added.
void addHostInputStall(nlohmann::ordered_json& section, uint64_t stall_cycles_per_step);

}  // namespace tpusim
