// The PE-by-PE array stepped the plain way, kept in the tests as the reference
// for simulatePeArray (sim/mxu/pe_array.hpp): every PE, one at a time, every
// cycle, each register a Token carrying its fold and index and checked at
// every use. The engine in sim/mxu must give the same cycles, breakdown and
// output bits, and report a hazard exactly when this one does.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/mxu/pe_array.hpp"

namespace tpusim {

// As simulatePeArray (same arguments, same checks and errors).
PeArrayRun referencePeArray(const ArrayConfig& array, const MatmulShape& shape, const std::vector<PassOperands>& passes,
                            uint64_t early_start = 0);

}  // namespace tpusim
