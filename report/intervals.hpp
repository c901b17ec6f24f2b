// Sets of cycles as sorted, disjoint [start, end) intervals: how the report measures what
// the units covered together (a unit kind's busy time, what one kind's time hides).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace tpusim {

using Interval = std::pair<uint64_t, uint64_t>;  // [start, end) in cycles

// Sorted, disjoint, non-empty.
std::vector<Interval> unionOf(std::vector<Interval> intervals);

uint64_t lengthOf(const std::vector<Interval>& intervals);

// Length of a's cover that b's does not cover (both from unionOf).
uint64_t lengthOutside(const std::vector<Interval>& a, const std::vector<Interval>& b);

// The union of two covers from unionOf.
std::vector<Interval> unionOf(const std::vector<Interval>& a, const std::vector<Interval>& b);

}  // namespace tpusim
