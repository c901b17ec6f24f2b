// A measured case as the one-op ONNX model a framework would export for it
// (api/validation/measured_cases.hpp lists what each op builds), so that the
// case runs through the same import, compiler and simulator as a user's model.
#pragma once

#include <onnx/onnx_pb.h>

#include "api/validation/measured_cases.hpp"

namespace tpusim {

// Throws an unsupported Error for an op or dtype this cannot build.
onnx::ModelProto caseModel(const MeasuredCase& c);

}  // namespace tpusim
