// Pieces the reference steppers share (reference_pe_array.hpp), from the
// engines' own (sim/mxu/pe_common.hpp): a register's Token, the operand lookup
// and the edges' skewed feed among them.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/mxu/pe_common.hpp"

namespace tpusim::pe_reference {

using pe::Counts;
using pe::finish;
using pe::Fold;
using pe::foldsOf;
using pe::forEachEntering;
using pe::hazard;
using pe::kNone;
using pe::operand;
using pe::Token;

PeArrayRun weightStationary(const ArrayConfig& array, const MatmulShape& shape, const std::vector<PassOperands>& passes,
                            uint64_t early);

}  // namespace tpusim::pe_reference
