#include "frontend/passes/cmem_placement.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "sim/hbm/cmem_config.hpp"

namespace tpusim {

namespace {

bool isCandidate(const program::Buffer& buffer) {
  return buffer.space() == program::HBM && buffer.bytes() > 0 &&
         (buffer.role() == program::WEIGHT || buffer.role() == program::OPTIMIZER_STATE);
}

// Bytes the step's DMAs move to and from each buffer's HBM side.
std::vector<uint64_t> trafficOf(const program::ChipProgram& chip) {
  std::vector<uint64_t> traffic(static_cast<size_t>(chip.buffers_size()), 0);
  for (const program::Instruction& ins : chip.instructions()) {
    if (!ins.has_dma()) continue;
    for (uint32_t id : ins.dma().src() == program::HBM ? ins.reads() : ins.writes()) {
      if (chip.buffers(static_cast<int>(id)).space() == program::HBM) traffic[id] += ins.dma().bytes();
    }
  }
  return traffic;
}

double reuse(uint64_t traffic, uint64_t bytes) {
  return static_cast<double>(traffic) / static_cast<double>(bytes);
}

std::string mib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

}  // namespace

CmemPlacement placeInCmem(program::ChipProgram& chip, const config::HardwareConfig& hw) {
  const CmemGeometry geometry = cmemGeometryOf(hw);
  CmemPlacement placement;
  if (geometry.mode != CmemMode::kSoftware) return placement;
  placement.capacity_bytes = geometry.capacity_bytes;
  const std::vector<uint64_t> traffic = trafficOf(chip);
  std::vector<uint32_t> order;
  for (const program::Buffer& buffer : chip.buffers()) {
    if (!isCandidate(buffer)) continue;
    placement.candidate_bytes += buffer.bytes();
    if (traffic[buffer.id()] > 0) order.push_back(buffer.id());
  }
  // Reuse compared as traffic_a * bytes_b against traffic_b * bytes_a, exactly.
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const unsigned __int128 ra = static_cast<unsigned __int128>(traffic[a]) * chip.buffers(static_cast<int>(b)).bytes();
    const unsigned __int128 rb = static_cast<unsigned __int128>(traffic[b]) * chip.buffers(static_cast<int>(a)).bytes();
    if (ra != rb) return ra > rb;
    const uint64_t size_a = chip.buffers(static_cast<int>(a)).bytes(),
                   size_b = chip.buffers(static_cast<int>(b)).bytes();
    return size_a != size_b ? size_a > size_b : a < b;
  });
  for (uint32_t id : order) {
    program::Buffer* buffer = chip.mutable_buffers(static_cast<int>(id));
    if (placement.pinned_bytes + buffer->bytes() > placement.capacity_bytes) continue;
    buffer->set_cmem_resident(true);
    placement.pinned_bytes += buffer->bytes();
    ++placement.pinned_buffers;
  }
  return placement;
}

std::string describeCmemPlacement(const program::ChipProgram& chip) {
  const std::vector<uint64_t> traffic = trafficOf(chip);
  std::string text;
  uint64_t bytes = 0, count = 0;
  for (const program::Buffer& buffer : chip.buffers()) {
    if (!buffer.cmem_resident()) continue;
    bytes += buffer.bytes();
    ++count;
    char line[64];
    std::snprintf(line, sizeof(line), " (reuse %.2f)\n", reuse(traffic[buffer.id()], buffer.bytes()));
    text += "  " + buffer.name() + ": " + mib(buffer.bytes()) + line;
  }
  return "cmem resident: " + std::to_string(count) + " buffers, " + mib(bytes) + "\n" + text;
}

}  // namespace tpusim
