// A closed-loop traffic source for the DRAM model tests: keeps the model's
// queues topped up (at most `outstanding` queued) with one-burst requests
// whose addresses come from a function of the request index, arriving when
// enqueued, and runs until all complete.
#pragma once

#include <algorithm>
#include <functional>

#include "sim/hbm/dram/dram_model.hpp"

namespace tpusim {

struct DriveResult {
  uint64_t bursts = 0;
  uint64_t last_done = 0;  // completion cycle of the last burst
  double bytesPerCycle(uint64_t burst_bytes) const {
    return static_cast<double>(bursts * burst_bytes) / static_cast<double>(last_done);
  }
};

inline DriveResult driveClosedLoop(DramModel& model, uint64_t count, const std::function<uint64_t(uint64_t)>& address,
                                   bool is_write = false, size_t outstanding = 0) {
  const DramConfig& c = model.config();
  if (outstanding == 0) outstanding = 2 * pseudoChannelCount(c) * c.queue_depth;
  DriveResult result;
  uint64_t issued = 0;
  while (result.bursts < count) {
    while (issued < count && model.queued() < outstanding) {
      model.enqueue(DramRequest{address(issued), burstBytes(c), is_write, model.now(), issued});
      ++issued;
    }
    for (const DramCompletion& done : model.advanceTo(model.now() + 8)) {
      ++result.bursts;
      result.last_done = std::max(result.last_done, done.done_cycle);
    }
  }
  return result;
}

}  // namespace tpusim
