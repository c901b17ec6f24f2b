#include "sim/hbm/dram/dram_model.hpp"

#include <algorithm>

#include "sim/common/error.hpp"

namespace tpusim {

namespace {

// Min-heap order for std::push_heap / pop_heap: earliest done_cycle on top, ties by id.
bool laterThan(const DramCompletion& a, const DramCompletion& b) {
  return a.done_cycle != b.done_cycle ? a.done_cycle > b.done_cycle : a.id > b.id;
}

double ratio(const Counter* num, const Counter* den, double scale = 1.0) {
  return den->value() == 0 ? 0.0 : static_cast<double>(num->value()) / (static_cast<double>(den->value()) * scale);
}

}  // namespace

void splitIntoBursts(const DramRequest& request, uint64_t burst_bytes, std::vector<DramRequest>& out) {
  const uint64_t first = request.address / burst_bytes;
  const uint64_t last = (request.address + std::max<uint64_t>(request.bytes, 1) - 1) / burst_bytes;
  for (uint64_t burst = first; burst <= last; ++burst) {
    DramRequest piece = request;
    piece.address = burst * burst_bytes;
    piece.bytes = burst_bytes;
    out.push_back(piece);
  }
}

DramCounters registerDramCounters(StatsRegistry& stats, const std::string& prefix) {
  stats.unit(prefix, UnitKind::kDram);
  auto counter = [&](const char* name, const char* unit, const char* doc) {
    return &stats.counter(prefix + "." + name, unit, doc);
  };
  DramCounters k;
  k.reads = counter("reads", "count", "RD bursts issued");
  k.writes = counter("writes", "count", "WR bursts issued");
  k.activates = counter("activates", "count", "ACT commands issued");
  k.precharges = counter("precharges", "count", "precharges, explicit PRE or auto-precharge");
  k.refreshes = counter("refreshes", "count", "all-bank REF commands, summed over pseudo-channels");
  k.row_hits = counter("row_hits", "count", "bursts served from a row already open");
  k.row_misses = counter("row_misses", "count", "bursts that needed an ACT to a closed bank");
  k.row_conflicts = counter("row_conflicts", "count", "bursts that needed a PRE of another row first");
  k.bytes = counter("bytes", "B", "bytes read and written");
  k.bus_busy_cycles =
      counter("data_bus_busy_cycles", "cycles", "cycles a data bus carried a burst, summed over pseudo-channels");
  stats.formula(prefix + ".row_hit_rate", "fraction", "row hits / bursts", [k] {
    const uint64_t all = k.row_hits->value() + k.row_misses->value() + k.row_conflicts->value();
    return all == 0 ? 0.0 : static_cast<double>(k.row_hits->value()) / static_cast<double>(all);
  });
  return k;
}

DramModel::DramModel(const DramConfig& config, StatsRegistry& stats, const std::string& prefix)
    : m_config((checkDramConfig(config), config)),
      m_map(config),
      m_burst_bytes(burstBytes(config)),
      m_capacity(capacityBytes(config)),
      m_counters(registerDramCounters(stats, prefix)) {
  m_cycles = &stats.counter(prefix + ".cycles", "cycles", "DRAM clock cycles simulated");
  const DramCounters k = m_counters;
  const Counter* cycles = m_cycles;
  const double channels = static_cast<double>(pseudoChannelCount(config));
  stats.formula(prefix + ".bandwidth_utilization", "fraction",
                "data-bus busy cycles / (cycles x pseudo-channels): the fraction of peak bandwidth used",
                [k, cycles, channels] { return ratio(k.bus_busy_cycles, cycles, channels); });
  const double mhz = config.clock_mhz;
  stats.formula(prefix + ".bandwidth_gbps", "GB/s", "bytes / simulated time",
                [k, cycles, mhz] { return ratio(k.bytes, cycles) * mhz / 1000.0; });
  m_channels.reserve(pseudoChannelCount(config));
  for (uint64_t i = 0; i < pseudoChannelCount(config); ++i) m_channels.emplace_back(m_config, m_counters, i);
}

void DramModel::setCommandLog(std::vector<DramCommandRecord>* log) {
  for (PseudoChannel& channel : m_channels) channel.setCommandLog(log);
}

void DramModel::enqueue(const DramRequest& r) {
  if (r.bytes != m_burst_bytes) {
    throw Error(ErrorKind::kInvalidInput, "DRAM request " + std::to_string(r.id) + " of " + std::to_string(r.bytes) +
                                              " B: requests must be one burst of " + std::to_string(m_burst_bytes) +
                                              " B (splitIntoBursts makes them)");
  }
  if (r.address >= m_capacity) {
    throw Error(ErrorKind::kInvalidInput, "DRAM request " + std::to_string(r.id) + " at address " +
                                              std::to_string(r.address) + " is past the capacity of " +
                                              std::to_string(m_capacity) + " B");
  }
  if (r.arrival_cycle < std::max(m_now, m_last_arrival)) {
    throw Error(ErrorKind::kInvalidInput, "DRAM request " + std::to_string(r.id) + " arrives at cycle " +
                                              std::to_string(r.arrival_cycle) +
                                              ", before the model's cycle or the previous request's arrival (" +
                                              std::to_string(std::max(m_now, m_last_arrival)) + ")");
  }
  m_last_arrival = r.arrival_cycle;
  const DramAddress where = m_map.decode(r.address);
  const uint64_t bank = where.bank_group * m_config.banks_per_group + where.bank;
  m_channels[pseudoChannelOf(where)].push(PseudoChannel::Entry{
      r.id, r.arrival_cycle, bank, static_cast<int64_t>(where.row), r.is_write, PseudoChannel::kHit});
  m_peak_queued = std::max(m_peak_queued, ++m_queued);
}

std::span<const DramCompletion> DramModel::advanceTo(uint64_t cycle) {
  m_finished.clear();
  if (cycle <= m_now) return {};
  for (PseudoChannel& channel : m_channels) {
    const size_t before = m_in_flight.size();
    channel.runUntil(cycle, m_in_flight);
    for (size_t i = before; i < m_in_flight.size(); ++i) {
      std::push_heap(m_in_flight.begin(), m_in_flight.begin() + static_cast<std::ptrdiff_t>(i) + 1, laterThan);
    }
    m_queued -= m_in_flight.size() - before;
  }
  m_peak_in_flight = std::max(m_peak_in_flight, m_in_flight.size());
  while (!m_in_flight.empty() && m_in_flight.front().done_cycle <= cycle) {
    std::pop_heap(m_in_flight.begin(), m_in_flight.end(), laterThan);
    m_finished.push_back(m_in_flight.back());
    m_in_flight.pop_back();
  }
  m_cycles->add(cycle - m_now);
  m_now = cycle;
  return m_finished;
}

uint64_t DramModel::nextCompletionBound() const {
  const uint64_t shortest = m_now + std::min(m_config.timing.tCL, m_config.timing.tCWL) + burstCycles(m_config);
  return m_in_flight.empty() ? shortest : std::min(shortest, m_in_flight.front().done_cycle);
}

size_t DramModel::footprintBytes() const {
  const uint64_t banks = banksPerPseudoChannel(m_config);
  const size_t entry = sizeof(PseudoChannel::Entry);
  // Each pseudo-channel: itself, its bank and group states, four per-bank mark
  // arrays and its window (reserved); beyond the windows, the backlog's peak.
  const size_t per_channel = sizeof(PseudoChannel) + banks * (4 * sizeof(uint64_t) + sizeof(int64_t)) +
                             m_config.bank_groups * 3 * sizeof(uint64_t) + 4 * banks * sizeof(uint64_t) +
                             m_config.queue_depth * entry;
  const size_t windows = m_channels.size() * m_config.queue_depth;
  const size_t backlog = m_peak_queued > windows ? m_peak_queued - windows : 0;
  return sizeof(*this) + m_channels.size() * per_channel + backlog * entry +
         (m_peak_in_flight + m_finished.capacity()) * sizeof(DramCompletion);
}

}  // namespace tpusim
