// Pieces the reference steppers share (reference_pe_array.hpp): a register's
// Token, the operand lookup and the edges' skewed feed.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/mxu/pe_common.hpp"

namespace tpusim::pe_reference {

using pe::Counts;
using pe::finish;
using pe::Fold;
using pe::foldsOf;
using pe::hazard;
using pe::kNone;

// A value moving between PEs: which fold and which vector (or k) it belongs to.
struct Token {
  float value = 0.0f;
  int32_t fold = kNone;
  uint64_t index = 0;
  bool valid() const { return fold != kNone; }
};

// Operand value, or 0 when timing zeros.
inline float operand(const std::vector<PassOperands>& passes, uint64_t pass, bool lhs, uint64_t at) {
  if (passes.empty()) return 0.0f;
  return lhs ? passes[pass].lhs[at] : passes[pass].rhs[at];
}

// The edges' skewed feed: lane i of an edge takes element j of a fold started at s in
// cycle s + i + j * interval, for j < length. Calls visit(f, j) for each fold f < started
// whose stream reaches lane i at cycle t, newest fold first; a fold has fully entered all
// `lanes` lanes by s + lanes + length * interval, and every older fold has too.
template <typename Visit>
void forEachEntering(const std::vector<uint64_t>& starts, size_t started, uint64_t lanes, uint64_t length,
                     uint64_t interval, uint64_t t, uint64_t i, Visit visit) {
  for (size_t back = 1; back <= started; ++back) {
    const size_t f = started - back;
    const uint64_t s = starts[f];
    if (s + lanes + length * interval <= t) break;
    if (t < s + i) continue;
    const uint64_t since = t - s - i;
    if (since % interval != 0 || since / interval >= length) continue;
    visit(static_cast<int32_t>(f), since / interval);
  }
}

PeArrayRun weightStationary(const ArrayConfig& array, const MatmulShape& shape, const std::vector<PassOperands>& passes,
                            uint64_t early);
PeArrayRun outputStationary(const ArrayConfig& array, const MatmulShape& shape, const std::vector<PassOperands>& passes,
                            uint64_t early);

}  // namespace tpusim::pe_reference
