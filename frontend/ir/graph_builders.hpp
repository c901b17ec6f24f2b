// Helpers shared by the Graph builders (graph.cpp, graph_training.cpp); internal to frontend/ir.
#pragma once

#include <string>
#include <vector>

#include "frontend/ir/graph.hpp"
#include "sim/common/error.hpp"

namespace tpusim::ir::builder_detail {

[[noreturn]] inline void shapeError(const std::string& op, const std::string& detail) {
  throw Error(ErrorKind::kInvalidInput, "op '" + op + "': " + detail);
}

inline bool isFloat(DType dtype) {
  return isFloatingDType(dtype);
}

inline Op makeOp(const std::string& name, OpType type, std::vector<int> inputs) {
  Op op;
  op.name = name;
  op.type = type;
  op.inputs = std::move(inputs);
  return op;
}

}  // namespace tpusim::ir::builder_detail
