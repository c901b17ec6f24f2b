#include "sim/hbm/cmem.hpp"

#include <algorithm>
#include <cstdio>

#include "sim/common/error.hpp"
#include "sim/hbm/hbm_access.hpp"

namespace tpusim {

namespace {

// One HBM transfer is at most this long (a TLM payload's length is 32 bits).
constexpr uint64_t kMaxRunBytes = uint64_t{1} << 30;

std::string mib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

}  // namespace

Cmem::Cmem(sc_core::sc_module_name name, const std::string& stat_prefix, const ClockDomain& clock,
           const CmemGeometry& geometry, const program::ChipProgram& program, StatsRegistry& stats,
           const Counter& total_cycles)
    : sc_core::sc_module(name),
      socket("socket"),
      hbm("hbm"),
      m_clock(clock),
      m_geometry(geometry),
      m_hit_latency(clock.cyclesCovering(geometry.hit_latency_ns * 1e-9)),
      m_port(ChannelTiming{geometry.bandwidth_gbps * 1e9 / clock.frequencyHz(), 0}),
      m_hits(stats.counter(stat_prefix + ".hits", "lines",
                           "lines found in CMEM (software mode: lines of transfers to resident buffers)")),
      m_misses(stats.counter(stat_prefix + ".misses", "lines",
                             "lines not in CMEM (software mode: lines of transfers that went to HBM)")),
      m_bytes_from_cmem(stats.counter(stat_prefix + ".bytes_from_cmem", "B", "bytes CMEM served to DMA reads")),
      m_bytes_to_cmem(stats.counter(stat_prefix + ".bytes_to_cmem", "B", "bytes of DMA writes CMEM took")),
      m_bytes_from_hbm(
          stats.counter(stat_prefix + ".bytes_from_hbm", "B", "bytes read from HBM: line fills and reads past CMEM")),
      m_bytes_to_hbm(
          stats.counter(stat_prefix + ".bytes_to_hbm", "B", "bytes written to HBM: write-backs and writes past CMEM")),
      m_written_back(
          stats.counter(stat_prefix + ".bytes_written_back", "B", "bytes of dirty lines written back to HBM")),
      m_lines_dirtied(stats.counter(stat_prefix + ".lines_dirtied", "lines", "clean or new lines a write made dirty")),
      m_busy(stats.counter(stat_prefix + ".busy_cycles", "cycles", "cycles the CMEM port was moving data")),
      m_transfers(stats.counter(stat_prefix + ".transfers", "count", "transfers the DMA engines sent to CMEM")) {
  stats.unit(stat_prefix, UnitKind::kCmem);
  socket.register_b_transport(this, &Cmem::b_transport);
  m_hbm_payload.set_data_ptr(nullptr);  // timing only, as the DMA engines
  if (geometry.mode == CmemMode::kCache) {
    m_tags = std::make_unique<CmemTags>(geometry.sets, geometry.ways);
  } else {
    uint64_t pinned = 0;
    for (const program::Buffer& buffer : program.buffers()) {
      if (buffer.space() != program::HBM || !buffer.cmem_resident() || buffer.bytes() == 0) continue;
      m_resident.emplace_back(buffer.offset(), buffer.offset() + buffer.bytes());
      pinned += buffer.bytes();
    }
    if (pinned > geometry.capacity_bytes) {
      throw Error(ErrorKind::kResource, "the Program keeps " + mib(pinned) +
                                            " of buffers resident in CMEM, which holds " +
                                            mib(geometry.capacity_bytes));
    }
    std::sort(m_resident.begin(), m_resident.end());
  }
  const Counter *hits = &m_hits, *misses = &m_misses, *busy = &m_busy, *total = &total_cycles;
  const Counter *dirtied = &m_lines_dirtied, *written = &m_written_back;
  const double line = static_cast<double>(geometry.line_bytes);
  stats.formula(stat_prefix + ".hit_rate", "fraction", "hits / (hits + misses)", [hits, misses] {
    const uint64_t all = hits->value() + misses->value();
    return all == 0 ? 0.0 : static_cast<double>(hits->value()) / static_cast<double>(all);
  });
  stats.formula(stat_prefix + ".dirty_bytes", "B", "bytes of lines still dirty when the step ends (cache mode)",
                [dirtied, written, line] {
                  return static_cast<double>(dirtied->value()) * line - static_cast<double>(written->value());
                });
  stats.formula(stat_prefix + ".utilization", "fraction", "busy cycles / total cycles of the CMEM port", [busy, total] {
    return total->value() == 0 ? 0.0 : static_cast<double>(busy->value()) / static_cast<double>(total->value());
  });
}

void Cmem::b_transport(int, tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) {
  const HbmAccess access = accessOf(payload);
  const uint64_t bytes = access.bytes();
  const uint64_t arrival = m_clock.cyclesAt(sc_core::sc_time_stamp() + delay);
  const bool read = payload.is_read();
  m_transfers.add();
  uint64_t done = 0;
  if (m_tags) {
    done = read ? cacheRead(access, arrival) : cacheWrite(access, arrival);
  } else if (resident(access.address)) {
    m_hits.add(linesOf(access));
    (read ? m_bytes_from_cmem : m_bytes_to_cmem).add(bytes);
    done = port(arrival, bytes) + m_hit_latency;
  } else {
    m_misses.add(linesOf(access));
    (read ? m_bytes_from_hbm : m_bytes_to_hbm).add(bytes);
    hbm->b_transport(payload, delay);
    return;
  }
  delay = m_clock.cycles(done) - sc_core::sc_time_stamp();
  payload.set_response_status(tlm::TLM_OK_RESPONSE);
}

uint64_t Cmem::cacheRead(const HbmAccess& access, uint64_t arrival) {
  m_missed.clear();
  m_victims.clear();
  const uint64_t line_bytes = m_geometry.line_bytes;
  uint64_t hit_bytes = 0, hits = 0, misses = 0;
  for (uint64_t row = 0; row < access.rows && access.row_bytes > 0; ++row) {
    const uint64_t address = access.address + row * access.row_stride;
    const uint64_t end = address + access.row_bytes;
    for (uint64_t line = address / line_bytes; line <= (end - 1) / line_bytes; ++line) {
      const CmemLookup lookup = m_tags->access(line, false);
      if (lookup.hit) {
        ++hits;
        hit_bytes += std::min(end, (line + 1) * line_bytes) - std::max(address, line * line_bytes);
      } else {
        ++misses;
        extend(m_missed, line);
      }
      if (lookup.evicted_dirty) extend(m_victims, lookup.evicted_line);
    }
  }
  m_hits.add(hits);
  m_misses.add(misses);
  const uint64_t written_back = toHbm(m_victims, tlm::TLM_WRITE_COMMAND, arrival);
  const uint64_t filled = toHbm(m_missed, tlm::TLM_READ_COMMAND, arrival);
  uint64_t done = std::max(arrival, written_back);
  if (hit_bytes > 0 || m_missed.empty()) {
    m_bytes_from_cmem.add(hit_bytes);
    done = std::max(done, port(arrival, hit_bytes) + m_hit_latency);
  }
  if (!m_missed.empty()) {
    uint64_t fill_lines = 0;
    for (const Run& run : m_missed) fill_lines += run.count;
    done = std::max(done, port(filled, fill_lines * line_bytes));
  }
  return done;
}

uint64_t Cmem::cacheWrite(const HbmAccess& access, uint64_t arrival) {
  m_victims.clear();
  const uint64_t line_bytes = m_geometry.line_bytes;
  const uint64_t bytes = access.bytes();
  uint64_t hits = 0, misses = 0, dirtied = 0;
  for (uint64_t row = 0; row < access.rows && access.row_bytes > 0; ++row) {
    const uint64_t address = access.address + row * access.row_stride;
    const uint64_t end = address + access.row_bytes;
    for (uint64_t line = address / line_bytes; line <= (end - 1) / line_bytes; ++line) {
      const CmemLookup lookup = m_tags->access(line, true);
      ++(lookup.hit ? hits : misses);
      dirtied += lookup.dirtied;
      if (lookup.evicted_dirty) extend(m_victims, lookup.evicted_line);
    }
  }
  m_hits.add(hits);
  m_misses.add(misses);
  m_lines_dirtied.add(dirtied);
  m_bytes_to_cmem.add(bytes);
  const uint64_t written_back = toHbm(m_victims, tlm::TLM_WRITE_COMMAND, arrival);
  return std::max(written_back, port(arrival, bytes) + m_hit_latency);
}

bool Cmem::resident(uint64_t address) const {
  // The last range starting at or before the address, if the address is inside it.
  auto after = std::upper_bound(m_resident.begin(), m_resident.end(), std::make_pair(address, ~uint64_t{0}));
  return after != m_resident.begin() && address < std::prev(after)->second;
}

uint64_t Cmem::linesOf(const HbmAccess& access) const {
  if (access.row_bytes == 0) return 0;
  const uint64_t line = m_geometry.line_bytes;
  uint64_t lines = 0;
  for (uint64_t row = 0; row < access.rows; ++row) {
    const uint64_t address = access.address + row * access.row_stride;
    lines += (address + access.row_bytes - 1) / line - address / line + 1;
  }
  return lines;
}

void Cmem::extend(std::vector<Run>& runs, uint64_t line) const {
  if (!runs.empty()) {
    Run& last = runs.back();
    if (last.first + last.count == line && (last.count + 1) * m_geometry.line_bytes <= kMaxRunBytes) {
      ++last.count;
      return;
    }
  }
  runs.push_back({line, 1});
}

uint64_t Cmem::toHbm(const std::vector<Run>& runs, tlm::tlm_command command, uint64_t arrival) {
  uint64_t done = arrival;
  for (const Run& run : runs) {
    const uint64_t bytes = run.count * m_geometry.line_bytes;
    m_hbm_payload.set_command(command);
    m_hbm_payload.set_address(run.first * m_geometry.line_bytes);
    m_hbm_payload.set_data_length(static_cast<unsigned int>(bytes));
    m_hbm_payload.set_streaming_width(static_cast<unsigned int>(bytes));
    m_hbm_payload.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time delay = m_clock.cycles(arrival) - sc_core::sc_time_stamp();
    hbm->b_transport(m_hbm_payload, delay);
    done = std::max(done, m_clock.cyclesAt(sc_core::sc_time_stamp() + delay));
    if (command == tlm::TLM_READ_COMMAND) {
      m_bytes_from_hbm.add(bytes);
    } else {
      m_bytes_to_hbm.add(bytes);
      m_written_back.add(bytes);
    }
  }
  return done;
}

uint64_t Cmem::port(uint64_t arrival, uint64_t bytes) {
  const ChannelGrant grant = m_port.request(arrival, bytes);
  m_busy.add(grant.busy_cycles);
  return grant.done_cycle;
}

}  // namespace tpusim
