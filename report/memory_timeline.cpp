#include "report/memory_timeline.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "report/utilization_windows.hpp"

namespace tpusim {

namespace {

constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

struct Access {                                        // the spans of the ops that write and read a buffer
  uint64_t first_write = kNever, first_read = kNever;  // earliest start
  uint64_t last_write_end = 0, last_read_end = 0;      // latest end
  bool written = false, read = false;
};

// Bytes covered by a changing set of address ranges: a segment tree over the elementary
// segments between the ranges' ends, each node with how many ranges cover it whole and the
// bytes covered below it. Each removal undoes an earlier addition of the same range.
class RangeUnion {
 public:
  explicit RangeUnion(std::vector<uint64_t> points)
      : m_points(std::move(points)),
        m_segments(m_points.size() > 1 ? m_points.size() - 1 : 0),
        m_count(4 * std::max<size_t>(m_segments, 1), 0),
        m_covered(4 * std::max<size_t>(m_segments, 1), 0) {}
  void add(uint64_t begin, uint64_t end, int delta) {
    const auto index = [&](uint64_t point) {
      return static_cast<size_t>(std::lower_bound(m_points.begin(), m_points.end(), point) - m_points.begin());
    };
    const size_t first = index(begin), last = index(end);  // segments [first, last)
    if (first < last) update(1, 0, m_segments, first, last, delta);
  }
  uint64_t bytes() const { return m_segments == 0 ? 0 : m_covered[1]; }

 private:
  // Node `node` spans segments [low, high).
  void update(size_t node, size_t low, size_t high, size_t first, size_t last, int delta) {
    if (last <= low || high <= first) return;
    if (first <= low && high <= last) {
      m_count[node] = static_cast<uint32_t>(static_cast<int64_t>(m_count[node]) + delta);
    } else {
      const size_t middle = (low + high) / 2;
      update(2 * node, low, middle, first, last, delta);
      update(2 * node + 1, middle, high, first, last, delta);
    }
    if (m_count[node] > 0) {
      m_covered[node] = m_points[high] - m_points[low];
    } else {
      m_covered[node] = high - low == 1 ? 0 : m_covered[2 * node] + m_covered[2 * node + 1];
    }
  }

  std::vector<uint64_t> m_points;  // sorted, unique
  size_t m_segments;
  std::vector<uint32_t> m_count;
  std::vector<uint64_t> m_covered;
};

}  // namespace

MemoryTimeline memoryTimeline(const program::ChipProgram& chip, const InstructionOps& ops, const Timeline& timeline,
                              uint64_t total_cycles) {
  // Each op's span: its first instruction's start to its last one's end.
  std::vector<std::pair<uint64_t, uint64_t>> spans(static_cast<size_t>(ops.count), {kNever, 0});
  for (const TimelineEvent& event : timeline.events()) {
    auto& span = spans[static_cast<size_t>(ops.op_of[static_cast<size_t>(event.instruction)])];
    span.first = std::min(span.first, event.start_cycle);
    span.second = std::max(span.second, event.end_cycle);
  }
  std::vector<Access> access(static_cast<size_t>(chip.buffers_size()));
  for (const TimelineEvent& event : timeline.events()) {
    const program::Instruction& ins = chip.instructions(static_cast<int>(event.instruction));
    const auto& [op_start, op_end] = spans[static_cast<size_t>(ops.op_of[static_cast<size_t>(event.instruction)])];
    for (uint32_t id : ins.reads()) {
      Access& a = access[id];
      a.read = true;
      a.first_read = std::min(a.first_read, op_start);
      a.last_read_end = std::max(a.last_read_end, op_end);
    }
    for (uint32_t id : ins.writes()) {
      Access& a = access[id];
      a.written = true;
      a.first_write = std::min(a.first_write, op_start);
      a.last_write_end = std::max(a.last_write_end, op_end);
    }
  }
  struct Change {
    uint64_t cycle;
    int delta;  // -1 frees, +1 takes: frees first at a cycle ([start, end) spans)
    uint64_t begin, end;
    bool operator<(const Change& o) const { return cycle != o.cycle ? cycle < o.cycle : delta < o.delta; }
  };
  std::vector<Change> changes;
  std::vector<uint64_t> points;
  for (int i = 0; i < chip.buffers_size(); ++i) {
    const program::Buffer& buffer = chip.buffers(i);
    const Access& a = access[static_cast<size_t>(i)];
    if (buffer.space() != program::HBM || buffer.bytes() == 0) continue;
    // Inputs and model state are in HBM before the step and (state) after it, as the plan has them.
    const bool persistent = buffer.role() == program::INPUT || buffer.role() == program::WEIGHT ||
                            buffer.role() == program::OPTIMIZER_STATE;
    if (!persistent && !a.read && !a.written) continue;
    const uint64_t start = persistent || (a.read && a.first_read <= a.first_write) ? 0 : a.first_write;
    const uint64_t end =
        persistent || (a.written && a.last_write_end >= a.last_read_end) ? total_cycles : a.last_read_end;
    if (start >= end) continue;
    const uint64_t begin = buffer.offset(), stop = buffer.offset() + buffer.bytes();
    changes.push_back({start, +1, begin, stop});
    changes.push_back({end, -1, begin, stop});
    points.push_back(begin);
    points.push_back(stop);
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  std::sort(changes.begin(), changes.end());

  MemoryTimeline out;
  out.window_cycles = timelineWindowCycles(total_cycles);
  if (out.window_cycles == 0) return out;
  out.peak_bytes.assign(static_cast<size_t>((total_cycles + out.window_cycles - 1) / out.window_cycles), 0);
  RangeUnion held(points);
  for (size_t i = 0; i < changes.size();) {
    const uint64_t cycle = changes[i].cycle;
    for (; i < changes.size() && changes[i].cycle == cycle; ++i)
      held.add(changes[i].begin, changes[i].end, changes[i].delta);
    // The bytes held from `cycle` until the next change.
    const uint64_t until = i < changes.size() ? changes[i].cycle : total_cycles;
    if (cycle >= until) continue;
    if (held.bytes() > out.peak) out.peak = held.bytes(), out.peak_cycle = cycle;
    for (uint64_t w = cycle / out.window_cycles; w * out.window_cycles < until; ++w) {
      out.peak_bytes[w] = std::max(out.peak_bytes[w], held.bytes());
    }
  }
  return out;
}

nlohmann::ordered_json memoryTimelineSection(const MemoryTimeline& memory) {
  nlohmann::ordered_json entry;
  entry["window_cycles"] = memory.window_cycles;
  entry["peak_bytes"] = memory.peak;
  entry["peak_cycle"] = memory.peak_cycle;
  entry["window_peak_bytes"] = memory.peak_bytes;
  return entry;
}

}  // namespace tpusim
