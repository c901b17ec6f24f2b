#include "sim/ps/ps_timing.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <tuple>

namespace tpusim::ps {

ShardCosts::ShardCosts(const PsConfig& config)
    : m_dcn_gbps(config.dcn_gbps),
      m_memory_gbps(config.memory_gbps),
      m_latency(picosFromMicros(config.dcn_latency_us)),
      m_service(static_cast<Picos>(std::llround(config.request_service_ns * 1e3))) {}

Picos ShardCosts::pull(const ShardLoad& load) const {
  if (load.rows == 0) return 0;
  return std::max(transferPicos(load.bytes, m_dcn_gbps), transferPicos(load.bytes, m_memory_gbps)) +
         load.rows * m_service;
}

Picos ShardCosts::push(const ShardLoad& load) const {
  if (load.rows == 0) return 0;
  return std::max(transferPicos(load.bytes, m_dcn_gbps), transferPicos(2 * load.bytes, m_memory_gbps)) +
         load.rows * m_service;
}

Picos ShardCosts::moveBusy(const ReshardMoves& moves, size_t shard) const {
  return std::max(transferPicos(moves.bytes_out[shard], m_dcn_gbps), transferPicos(moves.bytes_in[shard], m_dcn_gbps)) +
         moves.rows_in[shard] * m_service;
}

Picos ShardCosts::reshard(const ReshardMoves& moves) const {
  if (moves.rows == 0) return 0;
  Picos slowest = 0;
  for (size_t s = 0; s < moves.bytes_out.size(); ++s) slowest = std::max(slowest, moveBusy(moves, s));
  return m_latency + slowest;
}

namespace {

Schedule emptySchedule(const Traffic& traffic, const ShardCosts& costs) {
  Schedule schedule;
  schedule.step_end.assign(traffic.steps, 0);
  schedule.reshard.assign(traffic.steps, 0);
  schedule.worker_start.assign(traffic.steps * traffic.workers, 0);
  schedule.worker_end.assign(traffic.steps * traffic.workers, 0);
  schedule.shard_busy.assign(traffic.shards, 0);
  for (uint64_t k = 0; k < traffic.steps; ++k) {
    const ReshardMoves& moves = traffic.reshards[k];
    schedule.reshard[k] = costs.reshard(moves);
    if (moves.rows == 0) continue;
    for (uint64_t s = 0; s < traffic.shards; ++s) schedule.shard_busy[s] += costs.moveBusy(moves, s);
  }
  return schedule;
}

uint64_t workerBytes(const Traffic& traffic, uint64_t step, uint64_t worker) {
  uint64_t bytes = 0;
  for (uint64_t s = 0; s < traffic.shards; ++s) bytes += traffic.at(step, worker, s).bytes;
  return bytes;
}

}  // namespace

Schedule scheduleSync(const Traffic& traffic, const ShardCosts& costs, Picos compute) {
  Schedule schedule = emptySchedule(traffic, costs);
  const Picos round_trip = 2 * costs.latency();
  Picos now = 0;
  for (uint64_t k = 0; k < traffic.steps; ++k) {
    const Picos begin = now + schedule.reshard[k];
    Picos pull = 0, push = 0;
    for (uint64_t s = 0; s < traffic.shards; ++s) {
      ShardLoad all;
      for (uint64_t w = 0; w < traffic.workers; ++w) {
        all.rows += traffic.at(k, w, s).rows;
        all.bytes += traffic.at(k, w, s).bytes;
      }
      const Picos p = costs.pull(all), q = costs.push(all);
      schedule.shard_busy[s] += p + q;
      pull = std::max(pull, p);
      push = std::max(push, q);
    }
    Picos link = 0;
    for (uint64_t w = 0; w < traffic.workers; ++w) link = std::max(link, costs.workerLink(workerBytes(traffic, k, w)));
    now = begin + round_trip + std::max(pull, link) + compute + round_trip + std::max(push, link);
    for (uint64_t w = 0; w < traffic.workers; ++w) {
      schedule.worker_start[k * traffic.workers + w] = begin;
      schedule.worker_end[k * traffic.workers + w] = now;
    }
    schedule.step_end[k] = now;
  }
  return schedule;
}

namespace {

// The event-driven async run: requests reach the shards in time order, so
// serving them as they are popped is first come, first served.
class AsyncRun {
 public:
  AsyncRun(const Traffic& traffic, const ShardCosts& costs, Picos compute, uint64_t staleness, Schedule& schedule)
      : m_t(traffic),
        m_costs(costs),
        m_compute(compute),
        m_staleness(staleness),
        m_s(schedule),
        m_step(traffic.workers, 0),
        m_finished(traffic.steps, 0),
        m_shard_free(traffic.shards, 0) {}

  void run() {
    for (uint64_t w = 0; w < m_t.workers; ++w) start(w, 0);
    while (!m_events.empty()) {
      const auto [time, worker, phase] = m_events.top();
      m_events.pop();
      serve(time, worker, phase);
    }
  }

 private:
  enum Phase : int { kPull = 0, kPush = 1 };
  using Event = std::tuple<Picos, uint64_t, int>;  // arrival at the shards, worker, phase

  void start(uint64_t w, Picos not_before) {
    const uint64_t k = m_step[w];
    Picos begin = not_before;
    if (k > 0 && m_t.reshards[k].rows > 0) {
      if (m_finished[k - 1] < m_t.workers) return m_waiting.push_back(w);
      begin = std::max(begin, m_s.step_end[k - 1] + m_s.reshard[k]);
    }
    if (k >= m_staleness + 1) {
      const uint64_t needed = k - 1 - m_staleness;
      if (m_finished[needed] < m_t.workers) return m_waiting.push_back(w);
      begin = std::max(begin, m_s.step_end[needed]);
    }
    m_s.worker_start[k * m_t.workers + w] = begin;
    m_events.push({begin + m_costs.latency(), w, kPull});
  }

  void serve(Picos arrival, uint64_t w, int phase) {
    const uint64_t k = m_step[w];
    Picos done = arrival + m_costs.workerLink(workerBytes(m_t, k, w));
    for (uint64_t s = 0; s < m_t.shards; ++s) {
      const ShardLoad& load = m_t.at(k, w, s);
      const Picos busy = phase == kPull ? m_costs.pull(load) : m_costs.push(load);
      if (busy == 0) continue;
      m_shard_free[s] = std::max(m_shard_free[s], arrival) + busy;
      m_s.shard_busy[s] += busy;
      done = std::max(done, m_shard_free[s]);
    }
    const Picos answered = done + m_costs.latency();
    if (phase == kPull) return m_events.push({answered + m_compute + m_costs.latency(), w, kPush});
    m_s.worker_end[k * m_t.workers + w] = answered;
    m_s.step_end[k] = std::max(m_s.step_end[k], answered);
    m_finished[k] += 1;
    if (k + 1 < m_t.steps) {
      m_step[w] = k + 1;
      start(w, answered);
    }
    if (m_finished[k] == m_t.workers) {
      std::vector<uint64_t> waiting;
      waiting.swap(m_waiting);
      for (uint64_t v : waiting) start(v, m_s.worker_end[(m_step[v] - 1) * m_t.workers + v]);
    }
  }

  const Traffic& m_t;
  const ShardCosts& m_costs;
  Picos m_compute;
  uint64_t m_staleness;
  Schedule& m_s;
  std::vector<uint64_t> m_step;      // per worker: the step it is on
  std::vector<uint64_t> m_finished;  // per step: workers that finished it
  std::vector<Picos> m_shard_free;
  std::vector<uint64_t> m_waiting;  // workers blocked on the staleness bound or a re-shard
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> m_events;
};

}  // namespace

Schedule scheduleAsync(const Traffic& traffic, const ShardCosts& costs, Picos compute, uint64_t staleness_steps) {
  Schedule schedule = emptySchedule(traffic, costs);
  AsyncRun(traffic, costs, compute, staleness_steps, schedule).run();
  return schedule;
}

}  // namespace tpusim::ps
