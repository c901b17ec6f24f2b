// Splits a loop over rows into contiguous chunks, one thread each. A caller
// whose threads each own whole output rows gets the one-thread result at any
// thread count.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace tpusim {

// Runs body(begin, end) over [0, count) in up to `threads` contiguous chunks;
// with one thread (or one row) it runs on the caller's thread.
template <typename Body>
void parallelRows(int64_t count, int threads, Body body) {
  const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(threads, count));
  if (workers == 1) {
    body(int64_t{0}, count);
    return;
  }
  const int64_t chunk = (count + workers - 1) / workers;
  std::vector<std::thread> pool;
  for (int64_t begin = 0; begin < count; begin += chunk) {
    pool.emplace_back(body, begin, std::min(count, begin + chunk));
  }
  for (std::thread& thread : pool) thread.join();
}

}  // namespace tpusim
