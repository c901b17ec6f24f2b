// What stays in a systolic array's PEs (docs/mxu.md): shared by the MXU's
// timing (sim/mxu) and its numerics (matmul_numerics.hpp), whose summation
// order it decides.
#pragma once

namespace tpusim {

enum class Dataflow { kWeightStationary, kInputStationary, kOutputStationary };

}  // namespace tpusim
