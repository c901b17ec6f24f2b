// The PE-by-PE timing mode: steps every processing element of an R x C
// systolic array every cycle, moving real values through its registers, to
// validate the closed form of array_timing.hpp on small arrays (its cost is
// cycles x R x C, so real runs use the closed form).
//
// Each PE holds registers and acts only on what its neighbours held the cycle
// before. The controller starts a fold by a local rule (docs/mxu.md):
//   WS, IS  when the input port is free and column 0's next weight tile has
//           finished shifting in; column c starts shifting the next tile when
//           the current fold's first vector passes its top PE (double-buffered)
//           or its last vector does (single-buffered)
//   OS      when the input ports are free and column 0's output chain will be
//           free when the fold writes its first result (double-buffered) or
//           when it starts accumulating (single-buffered)
// Every register use is checked against the fold and vector it belongs to, so
// a schedule that starts a fold one cycle too early is caught as a hazard
// (an Error of kind kInternal) instead of giving a wrong answer.
//
// Values are float; the order in which each PE adds is the MXU's
// accumulation order (sim/common/matmul_numerics.hpp), so the outputs also
// check that library bit for bit.
//
// The weight-stationary engine (also input stationary) does a wavefront of PEs
// at once (pe_weight_stationary.cpp, docs/mxu.md); tests/mxu/reference keeps
// the plain one-PE-at-a-time stepper that it must match in every cycle count,
// output bit and hazard.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/mxu/array_timing.hpp"

namespace tpusim {

// One pass's operands: lhs [m, k] and rhs [k, n], row-major.
struct PassOperands {
  std::span<const float> lhs;
  std::span<const float> rhs;
};

struct PeArrayRun {
  ArrayTiming timing;      // counted cycle by cycle; macs are the MACs PEs performed
  std::vector<float> out;  // [m, n]: each fold's results added in the order they leave the array
};

// `passes` holds shape.passes operand pairs, or is empty to time zeros.
// `early_start` makes the controller start every fold after the first that
// many cycles before its rule allows (0 in real use; tests use 1 to show the
// rule is tight).
PeArrayRun simulatePeArray(const ArrayConfig& array, const MatmulShape& shape, const std::vector<PassOperands>& passes,
                           uint64_t early_start = 0);

}  // namespace tpusim
