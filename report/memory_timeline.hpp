// report.json's "memory_timeline" (docs/report-schema.md, "memory_timeline"): HBM held by the
// step's tensors over time, from the memory plan's addresses and the instruction
// timeline: the memory plan's liveness (from the op that writes a tensor to the last op
// that reads it) played out in time, each op standing for its span (its first
// instruction's start to its last one's end). Inputs, weights and optimizer state hold
// their bytes for the whole step; a tensor read before it is written, from cycle 0; one
// written last (an output), to the end of the step. Tensors that share addresses at the
// same time (views) count once: the figure is the bytes of the union of their address
// ranges. Tensors no instruction touches (kept in VMEM by fusion) hold none.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/instruction_ops.hpp"
#include "sim/common/timeline.hpp"
#include "traces/program.pb.h"

namespace tpusim {

struct MemoryTimeline {
  uint64_t window_cycles = 0;         // the windows of utilization_windows.hpp
  std::vector<uint64_t> peak_bytes;   // per window: the most bytes held at once in it
  uint64_t peak = 0, peak_cycle = 0;  // over the step, and the first cycle it is reached
};

MemoryTimeline memoryTimeline(const program::ChipProgram& chip, const InstructionOps& ops, const Timeline& timeline,
                              uint64_t total_cycles);

nlohmann::ordered_json memoryTimelineSection(const MemoryTimeline& memory);

}  // namespace tpusim
