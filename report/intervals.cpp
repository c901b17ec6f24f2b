#include "report/intervals.hpp"

#include <algorithm>

namespace tpusim {

std::vector<Interval> unionOf(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::vector<Interval> merged;
  for (const Interval& i : intervals) {
    if (i.second <= i.first) continue;
    if (!merged.empty() && i.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, i.second);
    } else {
      merged.push_back(i);
    }
  }
  return merged;
}

uint64_t lengthOf(const std::vector<Interval>& intervals) {
  uint64_t total = 0;
  for (const Interval& i : intervals) total += i.second - i.first;
  return total;
}

uint64_t lengthOutside(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  uint64_t overlap = 0;
  size_t j = 0;
  for (const Interval& i : a) {
    while (j < b.size() && b[j].second <= i.first) ++j;
    for (size_t k = j; k < b.size() && b[k].first < i.second; ++k) {
      overlap += std::min(i.second, b[k].second) - std::max(i.first, b[k].first);
    }
  }
  return lengthOf(a) - overlap;
}

std::vector<Interval> unionOf(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> both = a;
  both.insert(both.end(), b.begin(), b.end());
  return unionOf(std::move(both));
}

}  // namespace tpusim
